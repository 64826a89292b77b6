// A serving Engine on a fixture model, as the engine-level tests build it: the model with its adapter (where
// the fixture has one) and the references' hub embedding, `kv_blocks` blocks of KV cache, `config`.
// Reports a failure (and returns null) when it cannot load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tests/testing/fixtures.h"

namespace arach::testing {

// `folder`, when given, is loaded in place of the fixture's own (a folder of its files and more: PooledFixtureFolder);
// `loras`: LoRA adapters loaded beside it.
std::unique_ptr<Engine> MakeFixtureEngine(const std::string& model = "gpt2-tiny", EngineConfig config = {}, int kv_blocks = 256,
                                          const std::string& folder = "", const std::vector<LoraModule>& loras = {});
// The same engine with its runner on the backend `make_backend` builds as the CUDA backend (the cuda-sim suites'
// simulated CUDA backend).
std::unique_ptr<Engine> MakeFixtureEngineOn(const decltype(FixtureOptions::make_backend)& make_backend,
                                            const std::string& model, EngineConfig config = {}, int kv_blocks = 256,
                                            const std::string& folder = "", const std::vector<LoraModule>& loras = {});

// Makes `dir` a Sentence-Transformers folder of fixture `model`: its files linked, and modules.json and
// 1_Pooling/config.json written beside them, the Pooling module setting `mode_field` (a pooling_mode_* field).
void MakePooledFixtureFolder(const std::string& model, const std::string& mode_field, const std::string& dir);

// The tokens of the last tenth of the fixtures' validation text (data/tinyshakespeare.txt): prompts to cut from.
std::vector<int32_t> ValidationTokens(const Tokenizer& tokenizer);
// The engine's stats once it is idle (nothing running, waiting or holding blocks; stats are published after the step
// whose observers saw the last finish), or after 5 s.
EngineStats IdleStats(const Engine& engine);

}  // namespace arach::testing
