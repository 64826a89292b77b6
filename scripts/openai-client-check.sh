#!/usr/bin/env bash
# Drives a fixture arach-server (gpt2-tiny with its adapter) through its OpenAI HTTP API with the official
# openai npm client (installed from the npm registry into tests/openai_client) and compares the answers with
# the gRPC API (tests/openai_client/check.mjs); then /v1/chat/completions on qwen3-tiny with the real Qwen3 chat
# template (tests/openai_client/chat.mjs) and its Responses API (responses.mjs; stored.mjs: stored responses; agents.mjs: the OpenAI Agents SDK's tool
# loop and output types), embeddings (embeddings.mjs: the client's base64 against floats, dimensions, variants), predicted
# outputs (prediction.mjs: the same answer with a prediction, usage's prediction tokens), structured output (structured.mjs, Ajv as the JSON Schema oracle) and tool
# calls in the Hermes syntax (tools.mjs); tool calls in the Llama 3.1, Mistral and pythonic (Llama 3.2) syntaxes on llama3-tiny with
# templates written in those conventions (tests/openai_client/templates); then a closed server, HTTPS and an API
# key (tests/openai_client/secure.mjs).
# Exits 77 (skipped) without node/npm, the package or the fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
check=tests/openai_client
fixtures=${ARACH_FIXTURES:-../shared/fixtures}
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "[openai-client] $tool not found: skipped"; exit 77; }
done
[ -d "$fixtures/gpt2-tiny" ] || { echo "[openai-client] no fixtures at $fixtures: skipped"; exit 77; }
if [ ! -d "$check/node_modules/openai" ] || [ ! -d "$check/node_modules/ajv" ] || [ ! -d "$check/node_modules/@openai/agents" ]; then
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
start_fixture_server qwen3-tiny --chat_template "$template" --responses_store_bytes 1048576
node "$check/stored.mjs" "$http" qwen3-tiny
start_fixture_server qwen3-tiny --chat_template "$template"
server_help=$("$build/server/arach-server" --help 2>&1 || true)
if grep -q "Structured output.*: unavailable" <<< "$server_help"; then
  node "$check/responses.mjs" "$http" qwen3-tiny no-tools
else
  node "$check/responses.mjs" "$http" qwen3-tiny tools
  node "$check/agents.mjs" "$http" qwen3-tiny
fi
node "$check/embeddings.mjs" "$http" qwen3-tiny
node "$check/prediction.mjs" "$http" qwen3-tiny
if grep -q "Structured output.*: unavailable" <<< "$server_help"; then
  echo "[openai-client] structured output and tool calls: skipped (this build has no xgrammar)"
else
  node "$check/structured.mjs" "$http" qwen3-tiny
  tool_call_token=$(node -e 'const t = require(process.argv[1]); console.log(t.added_tokens.find((a) => a.content === "<tool_call>").id)' \
    "$(realpath "$fixtures/qwen3-tiny/tokenizer.json")")
  node "$check/tools.mjs" "$http" qwen3-tiny hermes "$tool_call_token"
  start_fixture_server llama3-tiny --chat_template "$check/templates/llama3_1_tools.jinja"
  node "$check/tools.mjs" "$http" llama3-tiny llama3_json
  start_fixture_server llama3-tiny --chat_template "$check/templates/mistral_tools.jinja"
  node "$check/tools.mjs" "$http" llama3-tiny mistral
  start_fixture_server llama3-tiny --chat_template "$check/templates/mistral_v11_tools.jinja"
  node "$check/tools.mjs" "$http" llama3-tiny mistral_v11
  start_fixture_server llama3-tiny --chat_template "$check/templates/llama3_2_pythonic_tools.jinja"
  node "$check/tools.mjs" "$http" llama3-tiny pythonic
fi
# A closed server: HTTPS with a throwaway CA (NODE_EXTRA_CA_CERTS makes node trust it) and an API key.
certs=$(mktemp -d)
fixture_logs+=("$certs")
(
  cd "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=arach-test-ca
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
  printf 'client:sk-openai-check:all:rpm=1000\ntight:sk-openai-tight::rpm=1\n' > keys.txt
) > /dev/null 2>&1
start_fixture_server gpt2-tiny --api_key_file "$certs/keys.txt" --http_tls_cert "$certs/server.pem" \
  --http_tls_key "$certs/server.key" --metrics_listen 127.0.0.1:0
NODE_EXTRA_CA_CERTS="$certs/ca.pem" node "$check/secure.mjs" "$http" gpt2-tiny sk-openai-check sk-openai-tight
