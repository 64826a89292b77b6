// libFuzzer: a PEFT LoRA adapter folder (adapter_config.json, then after a NUL byte adapter_model.safetensors) is
// loaded for a small Llama or refused with INVALID_ARGUMENT / NOT_FOUND naming a file, for any bytes: no crash, no
// other outcome, and a loaded adapter's matrices fit the model's projections.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model/lora_adapter.h"
#include "tests/fuzz/fuzz_scratch_dir.h"

namespace {

// d = 8, 2 query heads and 1 KV head of 4 (QKV 16 rows), MLP 12, 2 layers.
const arach::ModelConfig& SmallLlama() {
  static const arach::ModelConfig config = *arach::ParseModelConfig(
      R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1,
          "intermediate_size": 12, "num_hidden_layers": 2, "vocab_size": 16, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-5})",
      "config.json");
  return config;
}

const std::filesystem::path& Folder() { return arach::fuzz::ScratchDir("lora"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = std::min(input.find('\0'), input.size());
  std::ofstream(Folder() / "adapter_config.json", std::ios::trunc | std::ios::binary) << input.substr(0, split);
  const std::filesystem::path weights = Folder() / "adapter_model.safetensors";
  if (split < input.size()) {
    std::ofstream(weights, std::ios::trunc | std::ios::binary) << input.substr(split + 1);
  } else {
    std::filesystem::remove(weights);
  }
  const arach::ModelConfig& config = SmallLlama();
  const absl::StatusOr<arach::LoraAdapter> adapter = arach::LoadLoraAdapter("fuzzed", Folder().string(), config);
  if (adapter.ok()) {
    if (static_cast<int>(adapter->layers.size()) != config.num_layers || adapter->modules.empty()) std::abort();
    const int64_t in[] = {8, 8, 8, 12}, out[] = {16, 8, 24, 8};
    for (const arach::LoraLayer& layer : adapter->layers) {
      for (int s = 0; s < arach::kLoraSites; ++s) {
        const arach::LoraProjection& p = layer.sites[s];
        if (p.empty()) continue;
        if (p.a.shape.size() != 2 || p.a.shape[1] != in[s] || p.b.shape.size() != 2 || p.b.shape[0] != out[s] ||
            p.b.shape[1] != p.a.shape[0] || p.a.data.size() != static_cast<size_t>(p.a.shape[0] * in[s]) ||
            p.b.data.size() != static_cast<size_t>(out[s] * p.a.shape[0])) {
          std::abort();
        }
      }
    }
    return 0;
  }
  const absl::StatusCode code = adapter.status().code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kNotFound) std::abort();
  return 0;
}
