// PEFT LoRA adapters for the tests (tools/make_model/make_lora.h writes them), and the reference they are checked
// against: the same adapter merged into a copy of the model's checkpoint (W += scale * B A in the checkpoint's own
// layout, GPT-2's Conv1D transposed), the way PEFT's merge_and_unload makes a plain model of it. Serving the adapter
// unmerged must give what the merged model gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/make_model/make_lora.h"

namespace arach::testing {

// The checkpoint modules a LoRA may target (LoraTargetModules), failing the test where the folder cannot be read.
std::vector<std::string> LoraTargetModules(const std::string& model_dir);

// A random adapter (tools/make_model/make_lora.h) written into `dir`, failing the test where it cannot be.
using RandomLora = RandomLoraOptions;
void WriteRandomLora(const std::string& model_dir, const RandomLora& lora, const std::string& dir);

// Writes into `merged_dir` the model of `model_dir` with the adapter of `lora_dir` merged into its weights (one
// F32 model.safetensors), its other files linked.
void WriteMergedModel(const std::string& model_dir, const std::string& lora_dir, const std::string& merged_dir);

}  // namespace arach::testing
