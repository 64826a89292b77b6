#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

// glibc's expf has vector variants in libmvec, which libm.so links in as needed. This declaration (the one glibc's
// <math.h> makes only under -ffast-math) lets the compiler call them from ExpSum's loop (built with
// -fopenmp-simd): IEEE semantics kept, -inf terms give 0, each term within a few ulp.
extern "C" {
#pragma omp declare simd notinbranch
float expf(float);
}

namespace arach {
namespace {

constexpr size_t kLanes = 16;   // values compared at once: the compiler turns these loops into vector code
constexpr size_t kBlock = 1024;  // a row is scored a block at a time: every scan of a block after the first hits L1

// The largest value (-inf for an empty span; NaNs ignored). Sixteen independent running maxima, which the compiler
// vectorises: std::max_element keeps one, a chain of dependent compares ~15x slower on a 151k-vocabulary row.
float MaxOf(std::span<const float> values) {
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

// sum(exp(block[i] - max_value)) in float32 (at most kBlock terms of at most 1 each). LogSumExp and ScoreRow both
// sum through it, block by block, so that a token's log-prob is the same number whichever computed it.
float ExpSum(std::span<const float> block, float max_value) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (size_t i = 0; i < block.size(); ++i) sum += expf(block[i] - max_value);
  return sum;
}

// How many of `values` are above `threshold` (vector compares, no early exit).
int32_t CountAbove(const float* values, size_t count, float threshold) {
  int32_t above = 0;
#pragma omp simd reduction(+ : above)
  for (size_t i = 0; i < count; ++i) above += values[i] > threshold ? 1 : 0;
  return above;
}

// The most likely tokens of a row offered in id order, kept in `out` (at most the vocabulary's worth): while
// offered, a heap whose front is the least likely kept token, each entry's logprob holding the raw logit; Finish
// orders them most likely first (the lower id first among equals) and makes the logits log-probs. No allocation,
// and a block of kLanes tokens none of which beats the least likely kept one is passed over in a vector compare
// (a later token that only equals it has a larger id, so it is less likely).
class TopTokens {
 public:
  TopTokens(std::span<TokenLogprob> out, size_t vocabulary) : heap_(out.first(std::min(out.size(), vocabulary))) {}

  // Offers tokens [begin, end) of `logits`; every token before `begin` was offered already.
  void Offer(std::span<const float> logits, size_t begin, size_t end) {
    size_t t = begin;
    for (; t < end && size_ < heap_.size(); ++t) {
      heap_[size_++] = {static_cast<int32_t>(t), logits[t]};
      std::push_heap(heap_.begin(), heap_.begin() + static_cast<std::ptrdiff_t>(size_), MoreLikely);
    }
    if (heap_.empty()) return;
    for (; t + kLanes <= end; t += kLanes) {
      if (CountAbove(&logits[t], kLanes, heap_.front().logprob) == 0) continue;
      for (size_t j = t; j < t + kLanes; ++j) Consider(j, logits[j]);
    }
    for (; t < end; ++t) Consider(t, logits[t]);
  }
  // The logit a token must exceed to be kept once `out` is full (+inf when `out` is empty: none is).
  float threshold() const {
    if (heap_.empty()) return std::numeric_limits<float>::infinity();
    return size_ < heap_.size() ? -std::numeric_limits<float>::infinity() : heap_.front().logprob;
  }
  // Whether a block with `above` values over threshold() may hold a token to keep (any block may while `out` is
  // not full: its first tokens are kept whatever they are, -inf and NaN too).
  bool MayKeep(int32_t above) const { return size_ < heap_.size() || above > 0; }

  // The kept tokens, most likely first, with log-probs under `log_z` (the row's LogSumExp).
  void Finish(double log_z) {
    std::sort_heap(heap_.begin(), heap_.begin() + static_cast<std::ptrdiff_t>(size_), MoreLikely);
    for (size_t i = 0; i < size_; ++i) heap_[i].logprob = static_cast<float>(heap_[i].logprob - log_z);
  }

 private:
  static bool MoreLikely(const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
  }
  void Consider(size_t token, float logit) {
    if (!(logit > heap_.front().logprob)) return;
    std::pop_heap(heap_.begin(), heap_.end(), MoreLikely);
    heap_.back() = {static_cast<int32_t>(token), logit};
    std::push_heap(heap_.begin(), heap_.end(), MoreLikely);
  }

  std::span<TokenLogprob> heap_;
  size_t size_ = 0;  // entries filled so far
};

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
  const float max_value = MaxOf(logits);
  const float target_value = target >= 0 ? logits[static_cast<size_t>(target)] : std::numeric_limits<float>::infinity();
  const bool wants_scores = target >= 0 || !top.empty();
  TopTokens best(top, logits.size());
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
    if (best.MayKeep(above_kept)) best.Offer(logits, begin, begin + block.size());
  }
  score.argmax = argmax < 0 ? 0 : static_cast<int32_t>(argmax);  // none: empty or all NaN
  if (!wants_scores) return score;
  const double log_z = static_cast<double>(max_value) + std::log(sum);
  if (target >= 0) {
    score.logprob = static_cast<float>(logits[static_cast<size_t>(target)] - log_z);
    score.rank = 1 + static_cast<int32_t>(above_target);
  }
  best.Finish(log_z);
  return score;
}

}  // namespace arach
