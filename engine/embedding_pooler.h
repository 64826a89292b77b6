// Pools one embedding request's hidden states as the steps compute its prompt, chunk by chunk, the way the
// model's folder says (EmbeddingConfig: the last token, the mean over the prompt, or the first token).
#pragma once

#include <span>
#include <vector>

#include "engine/model/embedding_config.h"
#include "engine/runner/forward_batch.h"

namespace arach {

class EmbeddingPooler {
 public:
  EmbeddingPooler(PoolingMode mode, int hidden_size) : mode_(mode), hidden_size_(hidden_size) {}

  // Whether the pooling reads more than the prompt's last row (mean, first token): every prompt row must then be
  // computed (no prefix-cache reuse).
  bool ReadsEarlierRows() const { return mode_ != PoolingMode::kLastToken; }

  // The rows of a chunk of prompt tokens starting at position `start` that the pooling reads (`completes`: the chunk
  // ends the prompt).
  HiddenRows RowsOf(int start, bool completes) const;

  // The hidden state a step returned for the chunk at `start` (ForwardOutput::HiddenOf: [hidden_size], RowsOf's row
  // or the sum of its rows). A chunk at position 0 starts over: the prompt is computed again after a preemption.
  void Add(int start, std::span<const float> row);

  // The embedding once the chunk that completes a `prompt_len`-token prompt was added: [hidden_size].
  std::vector<float> Result(int prompt_len) const;

 private:
  PoolingMode mode_;
  int hidden_size_;
  std::vector<double> sum_;  // [hidden_size]: the sum of the rows read (one row but for the mean)
};

}  // namespace arach
