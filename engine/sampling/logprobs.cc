#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

// glibc's expf has vector variants in libmvec, which libm.so links in as needed. This declaration (the one glibc's
// <math.h> makes only under -ffast-math) lets the compiler call them from LogSumExp's loop (built with
// -fopenmp-simd): IEEE semantics kept, -inf terms give 0, each term within a few ulp.
extern "C" {
#pragma omp declare simd notinbranch
float expf(float);
}

namespace arach {
namespace {

// The largest value (-inf for an empty span; NaNs ignored). Sixteen independent running maxima, which the compiler
// vectorises: std::max_element keeps one, a chain of dependent compares ~15x slower on a 151k-vocabulary row.
float MaxOf(std::span<const float> values) {
  constexpr size_t kLanes = 16;
  float lane_max[kLanes];
  std::fill(std::begin(lane_max), std::end(lane_max), -std::numeric_limits<float>::infinity());
  const size_t n = values.size();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane_max[j] = values[i + j] > lane_max[j] ? values[i + j] : lane_max[j];
  }
  float result = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) result = values[i] > result ? values[i] : result;
  for (float m : lane_max) result = m > result ? m : result;
  return result;
}

}  // namespace

int32_t ArgMax(std::span<const float> values) {
  const auto first_max = std::find(values.begin(), values.end(), MaxOf(values));
  return first_max == values.end() ? 0 : static_cast<int32_t>(first_max - values.begin());  // end: empty or all NaN
}

int32_t RankOf(std::span<const float> values, int32_t index) {
  const float value = values[static_cast<size_t>(index)];
  return 1 + static_cast<int32_t>(std::count_if(values.begin(), values.end(), [value](float v) { return v > value; }));
}

double LogSumExp(std::span<const float> values) {
  const float max_value = MaxOf(values);
  // Blocks of float32 sums (1024 terms of at most 1 each), added up in double.
  constexpr size_t kBlock = 1024;
  double sum = 0.0;
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    float block_sum = 0.0f;
#pragma omp simd reduction(+ : block_sum)
    for (size_t i = begin; i < end; ++i) block_sum += expf(values[i] - max_value);
    sum += block_sum;
  }
  return static_cast<double>(max_value) + std::log(sum);
}

double LogSoftmaxAt(std::span<const float> values, int32_t index) {
  return static_cast<double>(values[index]) - LogSumExp(values);
}

namespace {

// The min(n, vocabulary) most likely tokens of `logits` (most likely first, the lower id first among equals) with
// their log-probs (log_z: the row's LogSumExp), appended to `top`. One pass keeping the best n so far in a heap
// whose top is the worst of them: no vocabulary-sized index array (0.6 MB at 151k tokens).
void AppendTopTokens(std::span<const float> logits, double log_z, int n, std::vector<TokenLogprob>& top) {
  const auto more_likely = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  const size_t k = std::min<size_t>(std::max(n, 0), logits.size());
  std::vector<int32_t> best;
  best.reserve(k);
  for (int32_t t = 0; t < static_cast<int32_t>(logits.size()) && k > 0; ++t) {
    if (best.size() < k) {
      best.push_back(t);
      std::push_heap(best.begin(), best.end(), more_likely);
    } else if (more_likely(t, best.front())) {
      std::pop_heap(best.begin(), best.end(), more_likely);
      best.back() = t;
      std::push_heap(best.begin(), best.end(), more_likely);
    }
  }
  std::sort_heap(best.begin(), best.end(), more_likely);  // most likely first
  for (int32_t t : best) top.push_back({t, static_cast<float>(logits[t] - log_z)});
}

}  // namespace

SampledToken RawLogprobs(std::span<const float> logits, int32_t token, int n) {
  const double log_z = LogSumExp(logits);
  SampledToken out;
  out.token = token;
  out.logprob = static_cast<float>(logits[token] - log_z);
  AppendTopTokens(logits, log_z, n, out.top);
  return out;
}

RowScore ScoreRow(std::span<const float> logits, int32_t target, std::span<TokenLogprob> top) {
  RowScore score;
  score.argmax = ArgMax(logits);
  if (target < 0 && top.empty()) return score;
  const double log_z = LogSumExp(logits);
  if (target >= 0) {
    score.logprob = static_cast<float>(logits[target] - log_z);
    score.rank = RankOf(logits, target);
  }
  std::vector<TokenLogprob> best;
  AppendTopTokens(logits, log_z, static_cast<int>(top.size()), best);
  std::copy(best.begin(), best.end(), top.begin());
  return score;
}

}  // namespace arach
