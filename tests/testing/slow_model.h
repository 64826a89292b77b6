// A random-weight GPT-2-124M (F16, with a random adapter) written once per build tree for the end-to-end
// tests that need generation slow enough to act mid-stream (~20 ms per decode step on two cores).
#pragma once

#include <string>

namespace arach::testing {

// The model folder (written on first use under ARACH_TEST_MODELS_DIR).
std::string SlowModelDir();

}  // namespace arach::testing
