#!/usr/bin/env bash
# Sanitizer builds and their test runs (CPU only):
#   scripts/sanitize.sh asan   ASan + UBSan over the whole C++ test suite (unit, conformance, e2e, faults;
#                              not the soak, whose length is the point)
#   scripts/sanitize.sh tsan   TSan over the engine and server tests (step loop, reactors, cancellation)
# Any report fails the run (UBSan does not recover; ASan/TSan abort or exit non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
trap print_stage_table EXIT
kind=${1:?asan or tsan}
case "$kind" in
  asan) sanitize="address,undefined"; build=${ASAN_BUILD_DIR:-build-asan};
        tests_regex="" ;;
  tsan) sanitize="thread"; build=${TSAN_BUILD_DIR:-build-tsan};
        tests_regex="Engine|Scheduler|Sampler|BlockAllocator|FixtureServer|SlowServer.ClientCancel|SlowServer.Deadline|ServerDrain|ServerStartup|HttpSlowServer.ClientGone|HttpSlowServer.Sigterm|ChatServer.Grpc|ShadowScorer|ShadowServer|ThreadTeam" ;;
  *) echo "usage: $0 asan|tsan" >&2; exit 2 ;;
esac
stage "$kind configure" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARACH_SANITIZE="$sanitize" -DARACH_ENABLE_CUDA=OFF \
  -DARACH_BUILD_BENCH=OFF -DARACH_CPU_NATIVE=OFF >/dev/null
stage "$kind build" cmake --build "$build" -j "$(nproc)"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# allocator_may_return_null: an impossible allocation returns null as the real allocator does, so the
# tests that ask for one (OutOfMemoryIsResourceExhausted) check our handling, not the sanitizer's abort.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:allocator_may_return_null=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp
# One backend thread and one OpenBLAS thread: OpenBLAS is not instrumented, and the kernels' parallel loops are
# not what these runs check (the serving threads are; the thread team itself has its own test, ThreadTeam,
# which starts its own teams).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
args=(--test-dir "$build" --output-on-failure --timeout 1200 -LE "deploy|soak")
[ -n "$tests_regex" ] && args+=(-R "$tests_regex")
stage "$kind tests" ctest "${args[@]}"
