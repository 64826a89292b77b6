#include "engine/model/weight_reader.h"

#include <algorithm>
#include <cstring>

#include "engine/core/status.h"

namespace arach {

absl::StatusOr<HostTensor> WeightReader::Read(const std::string& name, std::vector<int64_t> shape) const {
  HostTensor tensor;
  ARACH_ASSIGN_OR_RETURN(tensor.data, ReadWeightFloat(checkpoint_, name, shape, quantization_));
  tensor.shape = std::move(shape);
  return tensor;
}

absl::StatusOr<HostTensor> WeightReader::ReadTransposed(const std::string& name, int64_t rows, int64_t cols) const {
  ARACH_ASSIGN_OR_RETURN(std::vector<float> stored, ReadWeightFloat(checkpoint_, name, {rows, cols}, quantization_));
  HostTensor tensor;
  tensor.shape = {cols, rows};
  tensor.data.resize(stored.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) tensor.data[c * rows + r] = stored[r * cols + c];
  }
  return tensor;
}

HostTensor ConcatRows(const std::vector<const HostTensor*>& parts) {
  HostTensor out;
  int64_t rows = 0;
  for (const HostTensor* part : parts) {
    rows += part->rows();
    out.data.insert(out.data.end(), part->data.begin(), part->data.end());
  }
  out.shape = parts.front()->shape;
  out.shape[0] = rows;
  return out;
}

HostTensor DeinterleaveQkv(const HostTensor& interleaved, int heads, int head_dim) {
  const int64_t cols = interleaved.shape.size() == 2 ? interleaved.shape[1] : 1;
  HostTensor out;
  out.shape = interleaved.shape;
  out.data.resize(interleaved.data.size());
  const int64_t d = static_cast<int64_t>(heads) * head_dim;
  for (int h = 0; h < heads; ++h) {
    for (int part = 0; part < 3; ++part) {  // 0 = q, 1 = k, 2 = v
      for (int i = 0; i < head_dim; ++i) {
        const int64_t src_row = (static_cast<int64_t>(h) * 3 + part) * head_dim + i;
        const int64_t dst_row = part * d + static_cast<int64_t>(h) * head_dim + i;
        std::copy_n(interleaved.data.begin() + src_row * cols, cols, out.data.begin() + dst_row * cols);
      }
    }
  }
  return out;
}


absl::StatusOr<ModelWeights> LoadModelWeights(const Checkpoint& checkpoint, const ModelConfig& config) {
  WeightReader reader(checkpoint, config.quantization);
  switch (config.arch) {
    case Architecture::kGpt2: return LoadGpt2Weights(reader, config);
    case Architecture::kGptNeox: return LoadGptNeoxWeights(reader, config);
    case Architecture::kLlama:
    case Architecture::kMistral:
    case Architecture::kQwen2:
    case Architecture::kQwen3:
      return LoadLlamaWeights(reader, config);
  }
  return absl::InternalError("unknown architecture");
}

}  // namespace arach
