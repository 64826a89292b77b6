#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "engine/sampling/most_likely_tokens.h"
#include "engine/sampling/vector_math.h"

namespace arach {
namespace {

constexpr size_t kLanes = 16;    // running maxima at once: the compiler turns the loop into vector code
constexpr size_t kBlock = 1024;  // a row is scored a block at a time: every scan of a block after the first hits L1

// sum(exp(block[i] - max_value)) in float32 (at most kBlock terms of at most 1 each). LogSumExp and ScoreRow both
// sum through it, block by block, so that a token's log-prob is the same number whichever computed it.
float ExpSum(std::span<const float> block, float max_value) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (size_t i = 0; i < block.size(); ++i) sum += expf(block[i] - max_value);
  return sum;
}

}  // namespace

// Sixteen independent running maxima, which the compiler vectorises: std::max_element keeps one, a chain of
// dependent compares ~15x slower on a 151k-vocabulary row.
float MaxLogit(std::span<const float> values) {
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

int32_t ArgMax(std::span<const float> values) {
  const auto first_max = std::find(values.begin(), values.end(), MaxLogit(values));
  return first_max == values.end() ? 0 : static_cast<int32_t>(first_max - values.begin());  // end: empty or all NaN
}

int32_t RankOf(std::span<const float> values, int32_t index) {
  const float value = values[static_cast<size_t>(index)];
  return 1 + static_cast<int32_t>(std::count_if(values.begin(), values.end(), [value](float v) { return v > value; }));
}

double LogSumExp(std::span<const float> values) {
  const float max_value = MaxLogit(values);
  double sum = 0.0;  // the blocks' float32 sums added up in double
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    sum += ExpSum(values.subspan(begin, std::min(kBlock, values.size() - begin)), max_value);
  }
  return static_cast<double>(max_value) + std::log(sum);
}

double LogSoftmaxAt(std::span<const float> values, int32_t index) {
  return static_cast<double>(values[index]) - LogSumExp(values);
}

SampledToken RawLogprobs(std::span<const float> logits, int32_t token, int n) {
  SampledToken out;
  out.token = token;
  out.top.resize(std::min<size_t>(static_cast<size_t>(std::max(n, 0)), logits.size()));
  out.logprob = ScoreRow(logits, token, out.top).logprob;
  return out;
}

RowScore ScoreRow(std::span<const float> logits, int32_t target, std::span<TokenLogprob> top) {
  // Two passes over the row (from memory: a 151k-token row is 0.6 MB): its maximum, then a block at a time the
  // exp-sum, the argmax, the target's rank and the top tokens, every scan of a block after its first from L1.
  RowScore score;
  const float max_value = MaxLogit(logits);
  const float target_value = target >= 0 ? logits[static_cast<size_t>(target)] : std::numeric_limits<float>::infinity();
  const bool wants_scores = target >= 0 || !top.empty();
  std::vector<int32_t> best_ids;
  MostLikelyTokens best(logits, top.size(), best_ids);
  double sum = 0.0;
  int64_t above_target = 0;
  int64_t argmax = -1;
  for (size_t begin = 0; begin < logits.size(); begin += kBlock) {
    const std::span<const float> block = logits.subspan(begin, std::min(kBlock, logits.size() - begin));
    // Three counts in one vector loop: values above the target's (its rank), at the row's maximum (is the argmax
    // here?), above the least likely kept alternative (may one be here?).
    const float kept_threshold = best.threshold();
    int32_t above = 0, at_max = 0, above_kept = 0;
#pragma omp simd reduction(+ : above, at_max, above_kept)
    for (size_t i = 0; i < block.size(); ++i) {
      above += block[i] > target_value ? 1 : 0;
      at_max += block[i] >= max_value ? 1 : 0;
      above_kept += block[i] > kept_threshold ? 1 : 0;
    }
    if (argmax < 0 && at_max > 0) {
      argmax = static_cast<int64_t>(begin) + (std::find(block.begin(), block.end(), max_value) - block.begin());
      if (!wants_scores) break;
    }
    if (!wants_scores) continue;
    sum += ExpSum(block, max_value);
    above_target += above;
    if (!best.full() || above_kept > 0) best.OfferRange(begin, begin + block.size());
  }
  score.argmax = argmax < 0 ? 0 : static_cast<int32_t>(argmax);  // none: empty or all NaN
  if (!wants_scores) return score;
  const double log_z = static_cast<double>(max_value) + std::log(sum);
  if (target >= 0) {
    score.logprob = static_cast<float>(logits[static_cast<size_t>(target)] - log_z);
    score.rank = 1 + static_cast<int32_t>(above_target);
  }
  size_t place = 0;
  for (const int32_t id : best.Sorted()) top[place++] = {id, static_cast<float>(logits[static_cast<size_t>(id)] - log_z)};
  return score;
}

}  // namespace arach
