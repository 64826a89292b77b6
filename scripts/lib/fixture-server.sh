# Sourced by the end-to-end check scripts. start_fixture_server MODEL [FLAGS...] starts arach-server on the
# fixture model MODEL (with its adapter and the references' hub embedding) on loopback ports picked by the
# kernel and sets $grpc and $http to its addresses; every server started is killed when the script exits.
# Needs $build and $fixtures.
fixture_pids=()
fixture_logs=()
stop_fixture_servers() {
  for pid in "${fixture_pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "${fixture_logs[@]}"
}
trap stop_fixture_servers EXIT

start_fixture_server() {
  local model=$1
  shift
  local refs=refs.safetensors
  case "$model" in qwen3-tiny|qwen2-tiny|llama3-tiny) refs=refs_modern.safetensors ;; esac
  local log
  log=$(mktemp)
  fixture_logs+=("$log")
  "$build/server/arach-server" --model "$fixtures/$model" --adapter "$fixtures/$model/preproj.safetensors" \
    --arach_hub_embedding "$fixtures/refs/$refs:$model.hub_embedding" --kv_cache_bytes 33554432 \
    --listen 127.0.0.1:0 --http_listen 127.0.0.1:0 "$@" > "$log" 2>&1 &
  local pid=$!
  fixture_pids+=("$pid")
  for _ in $(seq 600); do
    grep -q "arach-server ready" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local ready
  ready=$(grep "arach-server ready" "$log") || { echo "the fixture server ($model) did not start:"; cat "$log"; return 1; }
  grpc=$(sed 's/.* grpc=\([^ ]*\).*/\1/' <<< "$ready")
  http=$(sed 's/.* http=\([^ ]*\).*/\1/' <<< "$ready")
}
