// Writes seeded random LoRA adapters in PEFT's format (adapter_config.json + adapter_model.safetensors) for a model
// folder, for demos, tests and benchmarks of --lora_modules (engine/model/lora_adapter.h reads them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arach {

// The checkpoint modules of `model_dir` a LoRA may target: every attention and MLP projection of every layer
// (e.g. "model.layers.0.self_attn.q_proj", "transformer.h.1.mlp.c_fc"), sorted.
absl::StatusOr<std::vector<std::string>> LoraTargetModules(const std::string& model_dir);

// Whether checkpoint module `module` stores its weight as GPT-2's Conv1D, [in, out] (else nn.Linear's [out, in]).
bool IsConv1DModule(const std::string& module);

struct RandomLoraOptions {
  std::vector<std::string> modules;  // checkpoint module names; empty: LoraTargetModules (every projection)
  int r = 8;
  double alpha = 16;
  bool use_rslora = false;
  uint64_t seed = 1;
  float b_stddev = 0.05f;  // A ~ N(0, 1 / in), B ~ N(0, b_stddev^2) (a trained adapter's B is not PEFT's initial 0)
};

// Writes the adapter into `out_dir` (created), A and B in float32, their shapes read from the model's checkpoint
// (GPT-2's Conv1D [in, out] included). Errors name the module or file that failed.
absl::Status MakeRandomLora(const std::string& model_dir, const RandomLoraOptions& options, const std::string& out_dir);

}  // namespace arach
