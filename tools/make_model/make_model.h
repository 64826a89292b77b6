// Writes seeded random-weight checkpoints in Hugging Face layout (config.json + model.safetensors +
// tokenizer) at real model sizes, for demos, tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/dtype.h"
#include "engine/model/model_config.h"

namespace arach {

struct MakeModelOptions {
  std::string arch = "gpt2";         // gpt2 | gpt_neox | llama | mistral | qwen2 | qwen3
  std::string preset = "tiny";       // see MakeModelPresets()
  std::string out_dir;
  uint64_t seed = 0;
  std::string dtype;                 // F32 | F16 | BF16; empty = the family's usual (F32, F16, BF16)
  std::string tokenizer_from;        // copy tokenizer files from this folder; empty = write a synthetic one
  bool write_adapter = false;        // also write a random pre-projection + skip adapter, preproj.safetensors
};

struct MakeModelPreset {
  std::string arch;
  std::string name;
  std::string description;
};
// Every (arch, preset) pair make-model knows.
std::vector<MakeModelPreset> MakeModelPresets();

// Writes the checkpoint; returns its config. Errors name the unknown arch/preset or the file that failed.
absl::StatusOr<ModelConfig> MakeModel(const MakeModelOptions& options);

}  // namespace arach
