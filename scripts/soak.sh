#!/usr/bin/env bash
# A bounded soak: SOAK_SECONDS (default 120) of mixed-variant Poisson load from arach-cli bench against a
# real arach-server (random-weight GPT-2-124M with a random adapter, CPU). Prints requests sent,
# completed and failed, the server's RSS (baseline after warm-up, peak, final) and its KV-cache blocks in
# use before and after; fails when anything failed, KV blocks stay held or RSS does not come back.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
seconds=${SOAK_SECONDS:-120}
rate=${SOAK_RATE:-2}
model=$build/test-models/gpt2-124m-f16
# Written beside its place and renamed into it: tests running at the same time (ctest -j) use the same folder.
if [ ! -f "$model/preproj.safetensors" ]; then
  "$build/tools/arach-run" make-model --arch gpt2 --preset 124m --dtype F16 --with-adapter --out "$model.tmp-$$" >/dev/null
  mv -T "$model.tmp-$$" "$model" 2>/dev/null || rm -rf "$model.tmp-$$"
fi
log=$(mktemp)
"$build/server/arach-server" --model "$model" --adapter "$model/preproj.safetensors" --kv-cache-bytes 268435456 \
  --max-num-seqs 16 --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 > "$log" 2>&1 &
pid=$!
trap 'kill -KILL $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 600); do grep -q "arach-server ready" "$log" && break; sleep 0.1; done
grpc=$(grep -o "ready; grpc=[0-9.:]*" "$log" | cut -d= -f2)
metrics=$(grep -o "ready; grpc=[^ ]* http=[^ ]* metrics=[0-9.:]*" "$log" | sed 's/.*metrics=//')
[ -n "$grpc" ] || { cat "$log"; exit 1; }
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }
# A series' value by name, whatever its labels (every series carries the served model's name).
metric() { curl -s "http://$metrics/metrics" | awk -v m="$1" '{ name = $1; sub(/\{.*/, "", name) } name == m {print $2}'; }
cli="$build/client/arach-cli"
mix=base=1,arach=1,skip=1,arach+skip=1
"$cli" bench --server "$grpc" --concurrency 8 --num-requests 16 --prompt-len 16:128 --output-len 8:64 --variant-mix $mix > /dev/null
sleep 1
rss_base=$(rss)
kv_before=$(metric arach_kv_cache_usage_ratio)
requests=$(python3 -c "print(max(1, int($rate * $seconds)))")
peak=$rss_base
( while kill -0 $pid 2>/dev/null; do r=$(rss); [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" > "$log.peak"; sleep 1; done ) &
sampler=$!
report=$("$cli" bench --server "$grpc" --rate "$rate" --num-requests "$requests" --prompt-len 16:128 --output-len 8:64 \
  --variant-mix $mix --json)
kill $sampler 2>/dev/null || true
for _ in $(seq 1 100); do [ "$(metric arach_num_requests_running)" = "0" ] && break; sleep 0.2; done
sleep 2
rss_final=$(rss)
peak=$(cat "$log.peak" 2>/dev/null || echo "$rss_base")
rm -f "$log.peak"
kv_after=$(metric arach_kv_cache_usage_ratio)
completed=$(echo "$report" | python3 -c "import json,sys; print(json.load(sys.stdin)['overall']['completed'])")
errors=$(echo "$report" | python3 -c "import json,sys; print(sum(json.load(sys.stdin)['overall']['errors_by_code'].values()))")
tps=$(echo "$report" | python3 -c "import json,sys; print(round(json.load(sys.stdin)['overall']['output_tokens_per_second'],1))")
echo "[soak] ${seconds}s at ${rate} req/s, mix $mix: sent=$requests completed=$completed failed=$errors output_tok/s=$tps"
echo "[soak] rss_kib baseline=$rss_base peak=$peak final=$rss_final; kv_usage before=$kv_before after=$kv_after"
kill -TERM $pid; wait $pid || true
trap - EXIT; rm -f "$log"
[ "$errors" = "0" ] && [ "$completed" = "$requests" ] || { echo "[soak] requests failed"; exit 1; }
[ "$kv_after" = "0" ] || { echo "[soak] KV blocks still held"; exit 1; }
[ "$rss_final" -le $((rss_base + 65536)) ] || { echo "[soak] RSS did not return to baseline"; exit 1; }
echo "[soak] passed"
