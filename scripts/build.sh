#!/usr/bin/env bash
# Configures and builds the project into ${BUILD_DIR:-build} (Release, Ninja).
# CUDA code is built when nvcc is found (one architecture: ${CUDA_ARCHS:-90a}); set ARACH_CUDA=OFF to skip it.
# ARACH_TARGETS="a b" builds only those targets (the main job builds the three executables it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
trap print_stage_table EXIT
build_dir=${BUILD_DIR:-build}
cuda=${ARACH_CUDA:-AUTO}
extra=()
[ "$cuda" != "OFF" ] && extra+=("-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90a}")
stage configure cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARACH_ENABLE_CUDA="$cuda" \
  -DARACH_CPU_NATIVE="${ARACH_CPU_NATIVE:-ON}" "${extra[@]}" "$@" >/dev/null
targets=()
for t in ${ARACH_TARGETS:-}; do targets+=(--target "$t"); done
stage build cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
