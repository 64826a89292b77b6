#!/usr/bin/env bash
# The main job: installs dependencies, builds, starts arach-server on loopback and streams a generation
# through arach-cli (gRPC) and through the OpenAI HTTP API (curl), then drains the server with SIGTERM.
# Model: $ARACH_MODEL if set, else the gpt2-tiny fixture (../shared/fixtures) when present (with its
# adapter), else a make-model GPT-2 checkpoint written to build/models/gpt2-tiny (with a random adapter).
# Device: cpu ($ARACH_DEVICE=cuda selects the CUDA backend, which has not yet been verified on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
ARACH_TARGETS="arach-server arach-cli arach-run" bash scripts/build.sh  # the tests build with the test command
build=${BUILD_DIR:-build}
model=${ARACH_MODEL:-}
adapter=""
if [ -z "$model" ]; then
  if [ -f ../shared/fixtures/gpt2-tiny/config.json ]; then
    model=../shared/fixtures/gpt2-tiny
  else
    model=$build/models/gpt2-tiny
    [ -f "$model/config.json" ] || "$build/tools/arach-run" make-model --arch gpt2 --preset tiny --with-adapter --out "$model"
  fi
fi
[ -f "$model/preproj.safetensors" ] && adapter="--adapter=$model/preproj.safetensors"
device=${ARACH_DEVICE:-cpu}
port=${ARACH_PORT:-50051}
http_port=${ARACH_HTTP_PORT:-8000}
log=$build/arach-server.log
echo "[main] starting arach-server on 127.0.0.1:$port (model $model, device $device)"
"$build/server/arach-server" --model "$model" $adapter --device "$device" --kv-cache-bytes 268435456 \
  --weight-dtype auto --kv-cache-dtype auto \
  --listen "127.0.0.1:$port" --http-listen "127.0.0.1:$http_port" > "$log" 2>&1 &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  "$build/client/arach-cli" health --server "127.0.0.1:$port" >/dev/null 2>&1 && break
  kill -0 $server_pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
"$build/client/arach-cli" info --server "127.0.0.1:$port" | head -8
for variant in base arach; do
  echo "[main] --- variant $variant ---"
  "$build/client/arach-cli" generate --server "127.0.0.1:$port" --variant "$variant" \
    --prompt "${ARACH_PROMPT:-ROMEO:}" --max-tokens "${ARACH_MAX_NEW_TOKENS:-48}"
done
if command -v curl >/dev/null; then
  name=$(basename "$model")
  echo "[main] --- HTTP: POST /v1/completions (stream, model $name:arach) ---"
  curl -sN "http://127.0.0.1:$http_port/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$name:arach\", \"prompt\": \"${ARACH_PROMPT:-ROMEO:}\", \"max_tokens\": 16, \"stream\": true}"
fi
echo "[main] metrics: curl http://127.0.0.1:$http_port/metrics"
kill -TERM $server_pid
wait $server_pid || true
trap - EXIT
tail -2 "$log"
