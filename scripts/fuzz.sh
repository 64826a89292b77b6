#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, -O1 -g1, through ccache) and runs each for
# FUZZ_SECONDS (default 20) from the seed corpus in tests/fuzz/corpus/<target> (new inputs go to a scratch
# corpus, not the repo), as many targets at once as there are CPUs (a libFuzzer process uses one).
# A crash fails the script; the reproducer is kept in ${BUILD_DIR}/fuzz-artifacts and should become a
# regression test (a seed in the corpus plus a unit test). Built without xgrammar: the targets fuzz our own
# parsers, none of which needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
trap print_stage_table EXIT
build=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
command -v clang++ >/dev/null || { echo "[fuzz] clang++ not found"; exit 1; }
CC=clang CXX=clang++ stage "fuzz configure" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DARACH_FUZZ=ON -DARACH_ENABLE_CUDA=OFF \
  -DARACH_BUILD_TESTS=OFF -DARACH_BUILD_BENCH=OFF -DARACH_CPU_NATIVE=OFF -DARACH_XGRAMMAR=OFF >/dev/null
targets=(fuzz_safetensors fuzz_model_config fuzz_embedding_config fuzz_lora_adapter fuzz_tokenizer fuzz_tokenizer_json fuzz_request fuzz_completion_request fuzz_chat_request
         fuzz_responses_request fuzz_tokenize_request
         fuzz_chat_output fuzz_chat_template fuzz_api_keys fuzz_batch_files)
stage "fuzz build" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
rm -rf "$build/fuzz-artifacts" "$build/fuzz-logs" "$build/fuzz-tmp"  # findings of this run only
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs" "$build/fuzz-tmp"
# The targets' scratch folders (tests/fuzz/fuzz_scratch_dir.h) go here, not to /tmp; a run that ends normally removes
# its own, so anything left once every run has passed is a leak, and fails the script.
TMPDIR=$(cd "$build/fuzz-tmp" && pwd); export TMPDIR
# A finding fails the fuzzer's stage and its report (error, stack, reproducer) goes to the log in full.
run_fuzzer() {
  local target=$1 scratch=$2 seeds=$3 log="$build/fuzz-logs/$1.log" rc=0
  "$build/tests/fuzz/$target" "$scratch" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" -print_final_stats=1 > "$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    grep -E "stat::number_of_executed_units|Done" "$log" | sed "s/^/[$target] /" || true
  else
    sed -n '/==ERROR\|ERROR: libFuzzer/,$p' "$log" | grep -v "^INFO" | head -60 | sed "s/^/[$target] /"
  fi
  return "$rc"
}
running=0
for target in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/${target#fuzz_}
  scratch=$build/fuzz-corpus/${target#fuzz_}
  mkdir -p "$scratch"
  echo "[fuzz] $target for ${seconds}s"
  stage "fuzz ${target#fuzz_}" run_fuzzer "$target" "$scratch" "$seeds" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
found=0
for target in "${targets[@]}"; do
  if ls "$build/fuzz-artifacts/$target-"* >/dev/null 2>&1; then
    echo "[fuzz] $target found a crash: $(ls "$build/fuzz-artifacts/$target-"*)"
    found=1
  fi
done
[ "$found" = 0 ] || exit 1
if [ -n "$(ls -A "$TMPDIR")" ]; then
  echo "[fuzz] a target left its scratch files behind in $TMPDIR:"; ls -A "$TMPDIR"
  exit 1
fi
echo "[fuzz] no findings"
