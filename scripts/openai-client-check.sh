#!/usr/bin/env bash
# Drives a fixture arach-server (gpt2-tiny with its adapter) through its OpenAI HTTP API with the official
# openai npm client (installed from the npm registry into tests/openai_client) and compares the answers with
# the gRPC API (tests/openai_client/check.mjs); then /v1/chat/completions on qwen3-tiny with the real Qwen3 chat
# template (tests/openai_client/chat.mjs). Exits 77 (skipped) without node/npm, the package or the fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
check=tests/openai_client
fixtures=${ARACH_FIXTURES:-../shared/fixtures}
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "[openai-client] $tool not found: skipped"; exit 77; }
done
[ -d "$fixtures/gpt2-tiny" ] || { echo "[openai-client] no fixtures at $fixtures: skipped"; exit 77; }
if [ ! -d "$check/node_modules/openai" ]; then
  (cd "$check" && npm ci --no-audit --no-fund --silent) || { echo "[openai-client] npm ci failed: skipped"; exit 77; }
fi
source scripts/lib/fixture-server.sh
start_fixture_server gpt2-tiny
node "$check/check.mjs" "$http" "$grpc" "$build/client/arach-cli" gpt2-tiny
# Chat: qwen3-tiny with the real Qwen3 chat template (taken from the fixtures at test time).
template=$(mktemp --suffix=.jinja)
fixture_logs+=("$template")
node -e 'const t = require(process.argv[1]); process.stdout.write(t.qwen3.template)' "$(realpath "$fixtures/chat/templates.json")" > "$template"
start_fixture_server qwen3-tiny --chat_template "$template"
node "$check/chat.mjs" "$http" "$grpc" "$build/client/arach-cli" qwen3-tiny "$(realpath "$fixtures/chat/cases.json")"
