#include "engine/embedding_pooler.h"

namespace arach {

HiddenRows EmbeddingPooler::RowsOf(int start, bool completes) const {
  switch (mode_) {
    case PoolingMode::kLastToken: return completes ? HiddenRows::kLast : HiddenRows::kNone;
    case PoolingMode::kMean: return HiddenRows::kSum;
    case PoolingMode::kFirstToken: return start == 0 ? HiddenRows::kFirst : HiddenRows::kNone;
  }
  return HiddenRows::kNone;
}

void EmbeddingPooler::Add(int start, std::span<const float> row) {
  if (start == 0 || sum_.empty()) sum_.assign(static_cast<size_t>(hidden_size_), 0.0);
  for (size_t k = 0; k < sum_.size() && k < row.size(); ++k) sum_[k] += row[k];
}

std::vector<float> EmbeddingPooler::Result(int prompt_len) const {
  const double divisor = mode_ == PoolingMode::kMean ? static_cast<double>(prompt_len) : 1.0;
  std::vector<float> embedding(sum_.size());
  for (size_t i = 0; i < sum_.size(); ++i) embedding[i] = static_cast<float>(sum_[i] / divisor);
  return embedding;
}

}  // namespace arach
