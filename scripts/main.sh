#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs an offline generation with arach-run.
# Model: $ARACH_MODEL if set, else the gpt2-tiny fixture (../shared/fixtures) when present, else a
# make-model GPT-2 checkpoint written to build/models/gpt2-tiny.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build=${BUILD_DIR:-build}
model=${ARACH_MODEL:-}
if [ -z "$model" ]; then
  if [ -f ../shared/fixtures/gpt2-tiny/config.json ]; then
    model=../shared/fixtures/gpt2-tiny
  else
    model=$build/models/gpt2-tiny
    [ -f "$model/config.json" ] || "$build/tools/arach-run" make-model --arch gpt2 --preset tiny --out "$model"
  fi
fi
prompt=${ARACH_PROMPT:-"ROMEO:"}
echo "[main] generating from $model"
"$build/tools/arach-run" generate --model "$model" --prompt "$prompt" --max_new_tokens "${ARACH_MAX_NEW_TOKENS:-48}"
