// PEFT LoRA adapters for the tests, and the reference they are checked against: the same adapter merged into a
// copy of the model's checkpoint (W += scale * B A in the checkpoint's own layout, GPT-2's Conv1D transposed), the
// way PEFT's merge_and_unload makes a plain model of it. Serving the adapter unmerged must give what the merged
// model gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arach::testing {

// The checkpoint modules of `model_dir` a LoRA may target: every attention and MLP projection of every layer
// (e.g. "model.layers.0.self_attn.q_proj", "transformer.h.1.mlp.c_fc"), sorted.
std::vector<std::string> LoraTargetModules(const std::string& model_dir);

struct RandomLora {
  std::vector<std::string> modules;  // checkpoint module names
  int r = 4;
  double alpha = 8;
  bool use_rslora = false;
  uint64_t seed = 1;
  float b_stddev = 0.05f;  // A ~ N(0, 1 / in), B ~ N(0, b_stddev^2)
};

// Writes adapter_config.json and adapter_model.safetensors (F32) of a random adapter for the model in `model_dir`
// into `dir`.
void WriteRandomLora(const std::string& model_dir, const RandomLora& lora, const std::string& dir);

// Writes into `merged_dir` the model of `model_dir` with the adapter of `lora_dir` merged into its weights (one
// F32 model.safetensors), its other files linked.
void WriteMergedModel(const std::string& model_dir, const std::string& lora_dir, const std::string& merged_dir);

}  // namespace arach::testing
