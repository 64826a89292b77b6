// The logit processors of the sampler (engine/sampling/sampler.h ApplyLogitProcessors) as flat per-row arrays
// for the GPU's kernel (cuda_logit_processing.cu): plain C++, built and tested everywhere.
//
// Each list is CSR-style: row r owns entries [start[r], start[r + 1]). The host does what needs sets and maps
// (distinct context tokens, counts of generated tokens, duplicate biases summed), so the kernel only adds,
// scales and masks.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/cuda/logit_processing_args.h"
#include "engine/sampling/sampler.h"

namespace arach::cuda {

struct LogitProcessingBatch {
  int rows = 0;
  int vocab = 0;
  std::vector<int32_t> bias_start{0}, bias_token;  // logit_bias
  std::vector<float> bias_value;
  std::vector<float> repetition_penalty;               // [rows], 1 = off
  std::vector<int32_t> repeated_start{0}, repeated_token;  // distinct context tokens (when the penalty is on)
  std::vector<float> presence_penalty, frequency_penalty;  // [rows]
  std::vector<int32_t> generated_start{0}, generated_token, generated_count;  // generated tokens and their counts
  std::vector<int32_t> allowed_word_start{0};  // structured output: [rows + 1] into allowed_words; none = all allowed
  std::vector<uint32_t> allowed_words;
  std::vector<int32_t> suppressed_start{0}, suppressed_token;  // min_tokens not reached yet: distinct stop tokens

  // Appends one row over a vocabulary of `vocab_size` tokens (every row must have the same; input.logits is not
  // read).
  void Add(const SamplerInput& input, int vocab_size);
};

}  // namespace arach::cuda
