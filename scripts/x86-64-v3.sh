#!/usr/bin/env bash
# The CPU backend's op suites built for x86-64-v3 (AVX2, FMA, F16C; no AVX-512): the vector paths that the GPU
# bundle's host code (scripts/gpu-check.sh pack) and a -march=native build on a processor without AVX-512 run:
# 8-lane float vectors, F16C's half loads, the int8 kernels without VNNI. The main build is -march=native (AVX-512
# where the machine has it) and the sanitizer builds are portable x86-64 (SSE2, 4 lanes), so neither runs them.
# Only the libraries the op suites need are built, without the server and xgrammar. Skipped (exit 0, saying
# so) where the processor cannot run x86-64-v3 code.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
trap print_stage_table EXIT
build=${V3_BUILD_DIR:-build-x86-64-v3}
if [ "$(uname -m)" != "x86_64" ] || ! grep -qw avx2 /proc/cpuinfo || ! grep -qw f16c /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "[x86-64-v3] skipped: this processor ($(uname -m)) cannot run x86-64-v3 code (AVX2, FMA, F16C)"
  exit 0
fi
stage "x86-64-v3 configure" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARACH_ENABLE_CUDA=OFF \
  -DARACH_CPU_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DARACH_BUILD_SERVER=OFF -DARACH_BUILD_BENCH=OFF \
  -DARACH_XGRAMMAR=OFF >/dev/null
suites=(ops_test attention_test half_elements_test)
stage "x86-64-v3 build" cmake --build "$build" -j "$(nproc)" --target "${suites[@]}"
# Each suite as one process (a few seconds in all); their CUDA cases skip (no CUDA in this build).
for suite in "${suites[@]}"; do
  stage "x86-64-v3 ${suite%_test}" "$build/tests/$suite" --gtest_brief=1
done
