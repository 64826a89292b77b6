# Sourced by the end-to-end check scripts: starts arach-server on the fixtures' gpt2-tiny (with its adapter
# and the references' hub embedding) on loopback ports picked by the kernel, and sets $grpc and $http to its
# addresses. The server is killed when the calling script exits. Needs $build and $fixtures.
start_fixture_server() {
  fixture_log=$(mktemp)
  "$build/server/arach-server" --model "$fixtures/gpt2-tiny" --adapter "$fixtures/gpt2-tiny/preproj.safetensors" \
    --arach_hub_embedding "$fixtures/refs/refs.safetensors:gpt2-tiny.hub_embedding" --kv_cache_bytes 33554432 \
    --listen 127.0.0.1:0 --http_listen 127.0.0.1:0 "$@" > "$fixture_log" 2>&1 &
  fixture_server=$!
  trap 'kill $fixture_server 2>/dev/null; wait $fixture_server 2>/dev/null; rm -f "$fixture_log"' EXIT
  for _ in $(seq 600); do
    grep -q "arach-server ready" "$fixture_log" && break
    kill -0 $fixture_server 2>/dev/null || break
    sleep 0.1
  done
  local ready
  ready=$(grep "arach-server ready" "$fixture_log") || { echo "the fixture server did not start:"; cat "$fixture_log"; return 1; }
  grpc=$(sed 's/.* grpc=\([^ ]*\).*/\1/' <<< "$ready")
  http=$(sed 's/.* http=\([^ ]*\).*/\1/' <<< "$ready")
}
