#!/usr/bin/env bash
# arach-cli bench through arach-server, once per weight dtype: for each dtype the server is started on MODEL
# (--device cpu or cuda, --weight-dtype D, KV cache dtype auto), then a closed-loop load at each concurrency, then
# it drains.
#   bench/serving_bench.sh MODEL_DIR [--device cpu|cuda] [--dtypes f32,f16,bf16,int8] [--concurrency 1,8]
#                          [--prompt_len 64] [--output_len 32] [--requests_per_slot 2] [--variant_mix base=1]
#                          [--kv_cache_bytes 536870912]
# Prints one line per dtype and concurrency: output tok/s, TTFT and TPOT medians (arach-cli bench --json).
# Figures, never assertions. The binaries: ARACH_BIN_DIR (a folder holding arach-server and arach-cli), else
# BUILD_DIR/server and BUILD_DIR/client (BUILD_DIR default build).
set -euo pipefail
model=${1:?model directory (e.g. one written by arach-run make-model --arch llama --preset 1b)}
shift
device=cpu dtypes=f32,f16,bf16,int8 concurrency=1,8 prompt_len=64 output_len=32 per_slot=2 variant_mix=base=1
kv_cache_bytes=536870912
while [ $# -gt 0 ]; do case "$1" in
  --device) device=$2; shift 2;; --dtypes) dtypes=$2; shift 2;; --variant_mix) variant_mix=$2; shift 2;;
  --kv_cache_bytes) kv_cache_bytes=$2; shift 2;; --concurrency) concurrency=$2; shift 2;; --prompt_len) prompt_len=$2; shift 2;;
  --output_len) output_len=$2; shift 2;; --requests_per_slot) per_slot=$2; shift 2;;
  *) echo "unknown argument $1" >&2; exit 2;; esac; done
build=${BUILD_DIR:-build}
server_bin=${ARACH_BIN_DIR:-$build/server}/arach-server
cli_bin=${ARACH_BIN_DIR:-$build/client}/arach-cli
port=${ARACH_BENCH_PORT:-50071}
log=$(mktemp)
server_pid=""
# One line of arach-cli bench --json: argv[1] the dtype, argv[2] the concurrency, argv[3] the device, argv[4] the mix.
summary=$(cat <<'PY'
import json, sys
o = json.load(sys.stdin)["overall"]
print(f"[serving] {sys.argv[3]} {sys.argv[4]} weights {sys.argv[1]:5s} concurrency {sys.argv[2]:>3s}: {o['output_tokens_per_second']:8.1f} output tok/s, "
      f"TTFT p50 {o['ttft_seconds']['p50'] * 1e3:7.1f} ms, TPOT p50 {o['tpot_seconds']['p50'] * 1e3:6.1f} ms, "
      f"{o['completed']}/{o['requests']} completed")
PY
)
stop_server() { [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; server_pid=""; }
# On a failure, the server's last lines say why (it may have stopped mid-load).
trap 'rc=$?; stop_server; [ "$rc" -eq 0 ] || tail -20 "$log" >&2; rm -f "$log"' EXIT
for dtype in ${dtypes//,/ }; do
  "$server_bin" --model "$model" --device "$device" --weight-dtype "$dtype" --kv-cache-dtype auto \
    --kv-cache-bytes "$kv_cache_bytes" --listen "127.0.0.1:$port" --http-listen "127.0.0.1:$((port + 1))" > "$log" 2>&1 &
  server_pid=$!
  until "$cli_bin" health --server "127.0.0.1:$port" > /dev/null 2>&1; do
    kill -0 "$server_pid" 2> /dev/null || exit 1  # the trap shows its log
    sleep 0.5
  done
  for c in ${concurrency//,/ }; do
    "$cli_bin" bench --server "127.0.0.1:$port" --concurrency "$c" --num_requests $((c * per_slot)) \
      --prompt_len "$prompt_len" --output_len "$output_len" --variant_mix "$variant_mix" --json |
      python3 -c "$summary" "$dtype" "$c" "$device" "$variant_mix"
  done
  stop_server
done
