// Random-weight models the tests write once per build tree (under TestModelsDir(), build_paths.h). Tests
// that ask at the same time (ctest -j) each write their own copy and rename it into place, so no test reads
// a half-written folder.
//
// The slow model: a random-weight GPT-2 (F16, with a random adapter) for the end-to-end tests that need
// generation slow enough to act mid-stream: GPT-2-124M (~20 ms per decode step on two cores). A
// sanitized build (ASan, TSan) runs 5-15x slower, so there it is the `mini` preset (d=256, 4 layers, GPT-2's
// vocabulary, an eighth of the bytes), whose sanitized step takes about as long as 124M's plain one: the
// tests keep their pace and their assertions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"

namespace arach::testing {

// The slow model's folder: GPT-2 124M in float16 (in sanitizer builds the `mini` preset, whose steps are not slow).
std::string SlowModelDir();
// Whether SlowModelDir() is the full-size model (false in sanitizer builds).
bool SlowModelIsFullSize();

// Server flags that give that model a KV cache of exactly `blocks` blocks of 16 tokens: a float32 cache (whatever
// --kv_cache_dtype auto would pick on this CPU) of the bytes those blocks take.
std::vector<std::string> SlowModelKvFlags(int blocks);

// A tiny random GPT-2 (the `tiny` preset, synthetic tokenizer, no adapter): fast, for tests of the server's
// surface rather than of its model.
std::string TinyRandomModelDir();
// An engine on TinyRandomModelDir() with `load` (e.g. its KV pool and block size) and `config`.
absl::StatusOr<std::unique_ptr<Engine>> MakeTinyRandomEngine(const LoadModelOptions& load, const EngineConfig& config = {});

}  // namespace arach::testing
