#!/usr/bin/env bash
# Sanitizer builds and their test runs (CPU only):
#   scripts/sanitize.sh asan   ASan + UBSan over the C++ test suite (unit, conformance, e2e, faults, the
#                              oracle and Python client scripts), less the soak (its length is the point), the
#                              openai npm client's script (six minutes under ASan, nine servers started one after
#                              another; what it drives, chat, Responses, embeddings, predicted outputs, structured
#                              output, tool calls, TLS and API keys, has its own e2e suites, which run here) and the
#                              validation-perplexity cases, which only recompute references over long texts on code
#                              paths the other conformance cases run too. The suites marked SANITIZERS none in
#                              tests/CMakeLists.txt are not even built here: the fleet (HAProxy's timing against
#                              5-10x slower replicas; the drain it exercises is in the e2e drain tests, which run
#                              here), the half-width- and int8-weight and half-width-KV-cache conformance suites
#                              (they recompute references through kernels the ops tests run here) and the FP8
#                              checkpoint suite (whole models; the FP8 reader runs here in its unit test).
#                              Our CUDA kernels run here on the SIMT simulator (the bf16 kernel suites, less the
#                              attention's comparison with the naive reference on random batches: 80 s instrumented;
#                              the fixed cases and the random half-width-cache batches run the same kernels), so ASan
#                              checks their accesses to device buffers and shared arrays.
#                              xgrammar, a dependency, is built uninstrumented (CMakeLists.txt), and so are the
#                              end-to-end tests' own bodies (tests/CMakeLists.txt): the servers they start are
#                              instrumented, and those are what this stage checks.
#   scripts/sanitize.sh tsan   TSan over the engine and server tests (step loop, reactors, cancellation,
#                              thread team): the executables labelled tsan (tests/CMakeLists.txt), the
#                              cases below within them; only those and what they start are built
# Any report fails the run (UBSan does not recover; ASan/TSan abort or exit non-zero). Both builds go
# through ccache; -O1 -g1 (line tables: stack traces keep file and line) compile in half the time of
# -O2 -g and the instrumented code runs as fast here.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/stage-timer.sh
trap print_stage_table EXIT
kind=${1:?asan or tsan}
# Read before OMP_NUM_THREADS is set below: coreutils' nproc honours OMP_NUM_THREADS, and with it at 1 ctest ran
# the sanitizer suites one test at a time.
cpus=$(nproc)
case "$kind" in
  asan) sanitize="address,undefined"; build=${ASAN_BUILD_DIR:-build-asan}; targets=(all)
        select=(-LE "deploy|soak" -E "ValidationPerplexity|MatchesTheNaiveReferenceOnRandomBatches/cuda_sim|^openai_client$") ;;
  tsan) sanitize="thread"; build=${TSAN_BUILD_DIR:-build-tsan}; targets=(tsan_tests)
        select=(-L tsan -R "Engine|Scheduler|Sampler|BlockAllocator|FixtureServer|SlowServer.ClientCancel|SlowServer.Deadline|ServerDrain|ServerStartup|HttpSlowServer.ClientGone|HttpSlowServer.Sigterm|ChatServer.Grpc|ShadowScorer|ShadowServer|ThreadTeam|ElasticThreadPool|RequestDeadlineServer|LoraAtRunTime|LoraRequests|LoraLimits.AReplacement|LoraSwapping|SendBatch|BackgroundResponses|EventLog") ;;
  *) echo "usage: $0 asan|tsan" >&2; exit 2 ;;
esac
stage "$kind configure" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DARACH_SANITIZE="$sanitize" -DARACH_ENABLE_CUDA=OFF \
  -DARACH_BUILD_BENCH=OFF -DARACH_CPU_NATIVE=OFF >/dev/null
stage "$kind build" cmake --build "$build" -j "$cpus" --target "${targets[@]}"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# allocator_may_return_null: an impossible allocation returns null as the real allocator does, so the
# tests that ask for one (OutOfMemoryIsResourceExhausted) check our handling, not the sanitizer's abort.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:allocator_may_return_null=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp
# One backend thread and one OpenBLAS thread: OpenBLAS is not instrumented, and the kernels' parallel loops are
# not what these runs check (the serving threads are; the thread team itself has its own test, ThreadTeam,
# which starts its own teams). With one thread per test, ctest runs as many tests at once as there are CPUs.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
stage "$kind tests" ctest --test-dir "$build" --output-on-failure --timeout 1200 -j "$cpus" "${select[@]}"
