#include "tests/testing/lora_folders.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "engine/model/checkpoint.h"
#include "engine/model/safetensors.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace arach::testing {
namespace {

std::unique_ptr<Checkpoint> OpenOrFail(const std::string& dir) {
  auto checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  return checkpoint.ok() ? std::move(*checkpoint) : nullptr;
}

}  // namespace

std::vector<std::string> LoraTargetModules(const std::string& model_dir) {
  absl::StatusOr<std::vector<std::string>> modules = arach::LoraTargetModules(model_dir);
  EXPECT_TRUE(modules.ok()) << modules.status();
  return modules.ok() ? *modules : std::vector<std::string>{};
}

void WriteRandomLora(const std::string& model_dir, const RandomLora& lora, const std::string& dir) {
  const absl::Status written = MakeRandomLora(model_dir, lora, dir);
  ASSERT_TRUE(written.ok()) << written;
}

void WriteMergedModel(const std::string& model_dir, const std::string& lora_dir, const std::string& merged_dir) {
  std::unique_ptr<Checkpoint> base = OpenOrFail(model_dir);
  ASSERT_NE(base, nullptr);
  auto adapter = Checkpoint::OpenFile(lora_dir + "/adapter_model.safetensors");
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  std::ifstream config_file(lora_dir + "/adapter_config.json");
  const nlohmann::json config = nlohmann::json::parse(config_file);
  const double alpha = config["lora_alpha"].get<double>();
  const bool rslora = config.value("use_rslora", false);

  std::map<std::string, std::vector<float>> weights;
  for (const std::string& name : base->Names()) {
    auto values = base->ReadFloat(name);
    ASSERT_TRUE(values.ok()) << values.status();
    weights[name] = std::move(*values);
  }
  for (const std::string& name : (*adapter)->Names()) {
    if (!absl::EndsWith(name, ".lora_A.weight")) continue;
    const std::string module = name.substr(17, name.size() - 17 - 14);  // strip "base_model.model." and ".lora_A.weight"
    auto a = (*adapter)->ReadFloat(name);
    auto b = (*adapter)->ReadFloat("base_model.model." + module + ".lora_B.weight");
    ASSERT_TRUE(a.ok() && b.ok());
    auto info = base->Find(module + ".weight");
    ASSERT_TRUE(info.ok()) << info.status();
    const int64_t rows = (*info)->shape[0], cols = (*info)->shape[1];
    const int64_t r = static_cast<int64_t>(a->size()) / (IsConv1DModule(module) ? rows : cols);
    const double scale = alpha / (rslora ? std::sqrt(static_cast<double>(r)) : static_cast<double>(r));
    std::vector<float>& w = weights[module + ".weight"];
    const int64_t out = IsConv1DModule(module) ? cols : rows, in = IsConv1DModule(module) ? rows : cols;
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        double delta = 0;
        for (int64_t k = 0; k < r; ++k) delta += static_cast<double>((*b)[o * r + k]) * (*a)[k * in + i];
        float& cell = IsConv1DModule(module) ? w[i * out + o] : w[o * in + i];
        cell = static_cast<float>(cell + scale * delta);
      }
    }
  }
  std::filesystem::create_directories(merged_dir);
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, values] : weights) {
    auto info = base->Find(name);
    tensors.push_back({name, DType::kF32, (*info)->shape, values.data()});
  }
  ASSERT_TRUE(WriteSafetensors(merged_dir + "/model.safetensors", tensors).ok());
  for (const auto& entry : std::filesystem::directory_iterator(model_dir)) {
    const std::string file = entry.path().filename().string();
    if (absl::EndsWith(file, ".safetensors") || file == "model.safetensors.index.json") continue;
    std::filesystem::create_symlink(entry.path(), std::filesystem::path(merged_dir) / file);
  }
}

}  // namespace arach::testing
