#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test with ctest (summary printed).
# Tests that need ../shared/fixtures skip with a message where it is absent; GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build.sh
# Sequential: the CPU backend parallelises every test across all cores already.
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 600
