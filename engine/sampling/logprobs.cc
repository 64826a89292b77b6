#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace arach {

int32_t ArgMax(std::span<const float> values) {
  return static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

int32_t RankOf(std::span<const float> values, int32_t index) {
  const float value = values[static_cast<size_t>(index)];
  return 1 + static_cast<int32_t>(std::count_if(values.begin(), values.end(), [value](float v) { return v > value; }));
}

double LogSoftmaxAt(std::span<const float> values, int32_t index) {
  const float max_value = *std::max_element(values.begin(), values.end());
  double sum = 0.0;
  for (float v : values) sum += std::exp(static_cast<double>(v) - max_value);
  return static_cast<double>(values[index]) - max_value - std::log(sum);
}

SampledToken RawLogprobs(std::span<const float> logits, int32_t token, int n) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  const double log_z = max_logit + std::log(sum);
  SampledToken out;
  out.token = token;
  out.logprob = static_cast<float>(logits[token] - log_z);
  if (n > 0) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t k = std::min<size_t>(n, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) out.top.push_back({ids[i], static_cast<float>(logits[ids[i]] - log_z)});
  }
  return out;
}

}  // namespace arach
