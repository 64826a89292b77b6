#include "tools/make_model/make_lora.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/checkpoint.h"
#include "engine/model/safetensors.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

constexpr const char* kProjections[] = {".q_proj", ".k_proj", ".v_proj", ".o_proj", ".gate_proj", ".up_proj",
                                        ".down_proj", ".c_attn", ".c_proj", ".c_fc", ".query_key_value",
                                        ".attention.dense", ".dense_h_to_4h", ".dense_4h_to_h"};

}  // namespace

bool IsConv1DModule(const std::string& module) {
  return absl::StrContains(module, ".attn.c_") || absl::StrContains(module, ".mlp.c_");  // GPT-2's projections
}

absl::StatusOr<std::vector<std::string>> LoraTargetModules(const std::string& model_dir) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(model_dir));
  std::vector<std::string> modules;
  for (const std::string& name : checkpoint->Names()) {
    if (!absl::EndsWith(name, ".weight")) continue;
    const std::string module = name.substr(0, name.size() - 7);
    for (const char* projection : kProjections) {
      if (absl::EndsWith(module, projection)) modules.push_back(module);
    }
  }
  std::sort(modules.begin(), modules.end());
  return modules;
}

absl::Status MakeRandomLora(const std::string& model_dir, const RandomLoraOptions& options, const std::string& out_dir) {
  if (options.r < 1) return absl::InvalidArgumentError("make-lora: the rank must be at least 1");
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(model_dir));
  std::vector<std::string> modules = options.modules;
  if (modules.empty()) {
    ARACH_ASSIGN_OR_RETURN(modules, LoraTargetModules(model_dir));
  }
  if (modules.empty()) return absl::InvalidArgumentError(absl::StrCat(model_dir, ": no projection a LoRA could target"));
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::deque<std::vector<float>> storage;  // stable addresses for the tensors to write
  std::vector<TensorToWrite> tensors;
  for (const std::string& module : modules) {
    ARACH_ASSIGN_OR_RETURN(const TensorInfo* info, checkpoint->Find(module + ".weight"));
    if (info->shape.size() != 2) return absl::InvalidArgumentError(absl::StrCat(module, ".weight is not a matrix"));
    const int64_t rows = info->shape[0], cols = info->shape[1];
    const int64_t out = IsConv1DModule(module) ? cols : rows, in = IsConv1DModule(module) ? rows : cols;
    std::vector<float>& a = storage.emplace_back(static_cast<size_t>(options.r * in));
    for (float& v : a) v = normal(rng) / std::sqrt(static_cast<float>(in));
    std::vector<float>& b = storage.emplace_back(static_cast<size_t>(out * options.r));
    for (float& v : b) v = normal(rng) * options.b_stddev;
    tensors.push_back({"base_model.model." + module + ".lora_A.weight", DType::kF32, {options.r, in}, a.data()});
    tensors.push_back({"base_model.model." + module + ".lora_B.weight", DType::kF32, {out, options.r}, b.data()});
  }
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) return absl::InvalidArgumentError(absl::StrCat(out_dir, ": ", error.message()));
  ARACH_RETURN_IF_ERROR(WriteSafetensors(out_dir + "/adapter_model.safetensors", tensors));
  std::vector<std::string> targets;
  for (const std::string& module : modules) targets.push_back(module.substr(module.rfind('.') + 1));
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  const nlohmann::json config = {{"peft_type", "LORA"},       {"task_type", "CAUSAL_LM"},  {"r", options.r},
                                 {"lora_alpha", options.alpha}, {"use_rslora", options.use_rslora},
                                 {"target_modules", targets}, {"bias", "none"},            {"lora_dropout", 0.05},
                                 {"fan_in_fan_out", false},   {"modules_to_save", nullptr}, {"use_dora", false},
                                 {"rank_pattern", nlohmann::json::object()}, {"alpha_pattern", nlohmann::json::object()},
                                 {"base_model_name_or_path", model_dir}};
  std::ofstream file(out_dir + "/adapter_config.json");
  file << config.dump(2);
  if (!file) return absl::InvalidArgumentError(absl::StrCat(out_dir, "/adapter_config.json: cannot write"));
  return absl::OkStatus();
}

}  // namespace arach
