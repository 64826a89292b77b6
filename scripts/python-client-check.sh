#!/usr/bin/env bash
# Generates the Python gRPC stubs (client/python/generate_stubs.sh) into the build tree and runs the
# streaming example (client/python/stream_generate.py) against a fixture arach-server: the text it prints
# must equal arach-cli's for the same greedy request, and its summary must name the variant and request id.
# Exits 77 (skipped) without grpc_python_plugin, python3-grpcio / python3-protobuf, or the fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
fixtures=${ARACH_FIXTURES:-../shared/fixtures}
python=/usr/bin/python3  # Debian's interpreter, where python3-grpcio and python3-protobuf live
[ -x "$python" ] || python=python3
command -v grpc_python_plugin >/dev/null || { echo "[python-client] grpc_python_plugin not found: skipped"; exit 77; }
"$python" -c "import grpc, google.protobuf" 2>/dev/null || { echo "[python-client] python3-grpcio/protobuf missing: skipped"; exit 77; }
[ -d "$fixtures/gpt2-tiny" ] || { echo "[python-client] no fixtures at $fixtures: skipped"; exit 77; }
stubs="$build/python-stubs"
bash client/python/generate_stubs.sh "$stubs"
source scripts/lib/fixture-server.sh
start_fixture_server gpt2-tiny
prompt="Once upon a time"
text=$(PYTHONPATH="$stubs" "$python" client/python/stream_generate.py --server "$grpc" --prompt "$prompt" \
  --variant arach --max-tokens 16 --request-id py-example 2> "$build/python-client.err")
summary=$(cat "$build/python-client.err")
expected=$("$build/client/arach-cli" generate --server="$grpc" --prompt="$prompt" --variant=arach --max_tokens=16 \
  --temperature=0 2>/dev/null)
echo "[python-client] text: $text"
echo "[python-client] $summary"
[ -n "$text" ] && [ "$text" = "$expected" ] || { echo "[python-client] FAIL: the text differs from arach-cli's: $expected"; exit 1; }
grep -q "variant=arach .*request_id=py-example" <<< "$summary" || { echo "[python-client] FAIL: bad summary"; exit 1; }
echo "[python-client] ok"
