#include "engine/backend/cuda/logit_processing.h"

#include <algorithm>
#include <map>
#include <set>

namespace arach::cuda {

void LogitProcessingBatch::Add(const SamplerInput& in, int vocab_size) {
  const SamplingParams& p = *in.params;
  vocab = vocab_size;
  ++rows;
  auto in_vocab = [this](int32_t t) { return t >= 0 && t < vocab; };

  std::map<int32_t, float> biases;  // duplicates add up, as the sampler adds each entry
  for (const auto& [token, bias] : p.logit_bias) {
    if (in_vocab(token)) biases[token] += bias;
  }
  for (const auto& [token, bias] : biases) {
    bias_token.push_back(token);
    bias_value.push_back(bias);
  }
  bias_start.push_back(static_cast<int32_t>(bias_token.size()));

  repetition_penalty.push_back(p.repetition_penalty);
  if (p.repetition_penalty != 1.0f) {
    const std::set<int32_t> seen(in.context.begin(), in.context.end());
    for (int32_t t : seen) {
      if (in_vocab(t)) repeated_token.push_back(t);
    }
  }
  repeated_start.push_back(static_cast<int32_t>(repeated_token.size()));

  presence_penalty.push_back(p.presence_penalty);
  frequency_penalty.push_back(p.frequency_penalty);
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    std::map<int32_t, int32_t> counts;
    const size_t generated = std::min(in.context.size(), static_cast<size_t>(std::max(0, in.num_generated)));
    for (int32_t t : in.context.last(generated)) ++counts[t];
    for (const auto& [t, count] : counts) {
      if (!in_vocab(t)) continue;
      generated_token.push_back(t);
      generated_count.push_back(count);
    }
  }
  generated_start.push_back(static_cast<int32_t>(generated_token.size()));

  allowed_words.insert(allowed_words.end(), in.allowed.begin(), in.allowed.end());
  allowed_word_start.push_back(static_cast<int32_t>(allowed_words.size()));

  if (in.num_generated < p.min_tokens) {
    const std::set<int32_t> stops(in.suppressed.begin(), in.suppressed.end());
    for (int32_t t : stops) {
      if (in_vocab(t)) suppressed_token.push_back(t);
    }
  }
  suppressed_start.push_back(static_cast<int32_t>(suppressed_token.size()));
}

}  // namespace arach::cuda
