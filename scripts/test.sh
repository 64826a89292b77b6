#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every test with ctest (summary printed), then
# the reliability jobs: the CPU op suites built for x86-64-v3, libFuzzer targets for a bounded time, the ASan+UBSan
# suite and the TSan suite.
# ARACH_QUICK=1 stops after the main suite. Tests that need ../shared/fixtures skip with a message where
# it is absent; GPU tests skip without a GPU. Every stage is timed; the table is printed at the end (also
# when a stage fails).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
. scripts/lib/failed-test-tails.sh
trap print_stage_table EXIT
stage deps bash scripts/install-deps.sh --test
bash scripts/build.sh
# As many tests at once as there are CPUs: most are short processes or wait on a server, and the few that
# compare timings are RUN_SERIAL (tests/CMakeLists.txt).
stage "main tests" ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900 -j "$(nproc)" || {
  rc=$?
  print_failed_test_tails "${BUILD_DIR:-build}"
  exit "$rc"
}
if [ "${ARACH_QUICK:-0}" = "1" ]; then exit 0; fi
echo "[test] CPU kernels as an x86-64-v3 build (AVX2, no AVX-512) compiles them"
bash scripts/x86-64-v3.sh
echo "[test] fuzzing"
FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
echo "[test] AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/sanitize.sh asan
echo "[test] ThreadSanitizer"
bash scripts/sanitize.sh tsan
echo "[test] all passed"
