// Reads named checkpoint tensors into HostTensors with shape checks (used by the family loaders).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_weights.h"
#include "engine/model/weight_quantization.h"

namespace arach {

class WeightReader {
 public:
  // `quantization`: how F8_E4M3 weights are scaled (config.json's quantization_config; none by default).
  explicit WeightReader(const Checkpoint& checkpoint, WeightQuantization quantization = {})
      : checkpoint_(checkpoint), quantization_(quantization) {}

  // Tensor `name` with exactly `shape`, as float32 (FP8 weights dequantized with their scales).
  absl::StatusOr<HostTensor> Read(const std::string& name, std::vector<int64_t> shape) const;
  // A 2-D tensor stored as [rows, cols] (e.g. GPT-2 Conv1D [in, out]) returned transposed [cols, rows].
  absl::StatusOr<HostTensor> ReadTransposed(const std::string& name, int64_t rows, int64_t cols) const;

  bool Has(const std::string& name) const { return checkpoint_.Has(name); }

 private:
  const Checkpoint& checkpoint_;
  WeightQuantization quantization_;
};

// Concatenates 2-D (or 1-D) tensors along the first dimension.
HostTensor ConcatRows(const std::vector<const HostTensor*>& parts);

// Regroups rows of `interleaved` ((3 * heads * head_dim) rows of `cols` values, GPT-NeoX's fused QKV) from per-head
// [q k v] blocks into the canonical [q of all heads; k of all heads; v of all heads].
HostTensor DeinterleaveQkv(const HostTensor& interleaved, int heads, int head_dim);

// Family loaders (one file each).
absl::StatusOr<ModelWeights> LoadGpt2Weights(const WeightReader& reader, const ModelConfig& config);
absl::StatusOr<ModelWeights> LoadGptNeoxWeights(const WeightReader& reader, const ModelConfig& config);
absl::StatusOr<ModelWeights> LoadLlamaWeights(const WeightReader& reader, const ModelConfig& config);

}  // namespace arach
