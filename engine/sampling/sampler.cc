#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/random.h"

namespace arach {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();
// Candidates pre-selected before sorting for top-p (a full sort of a 50k vocabulary is wasteful).
constexpr size_t kTopPPreselect = 1024;

}  // namespace

void ApplyLogitProcessors(const SamplerInput& in, std::vector<float>& work) {
  const SamplingParams& p = *in.params;
  const size_t vocab = in.logits.size();
  work.assign(in.logits.begin(), in.logits.end());
  for (const auto& [token, bias] : p.logit_bias) {
    if (token >= 0 && static_cast<size_t>(token) < vocab) work[token] += bias;
  }
  if (p.repetition_penalty != 1.0f) {
    std::unordered_set<int32_t> seen(in.context.begin(), in.context.end());
    for (int32_t t : seen) {
      if (t < 0 || static_cast<size_t>(t) >= vocab) continue;
      work[t] = work[t] > 0.0f ? work[t] / p.repetition_penalty : work[t] * p.repetition_penalty;
    }
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {  // over the generated tokens only
    std::unordered_map<int32_t, int> counts;
    const size_t generated = std::min(in.context.size(), static_cast<size_t>(std::max(0, in.num_generated)));
    for (int32_t t : in.context.last(generated)) ++counts[t];
    for (const auto& [t, count] : counts) {
      if (t >= 0 && static_cast<size_t>(t) < vocab) work[t] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    }
  }
  if (!in.allowed.empty()) {
    for (size_t t = 0; t < vocab; ++t) {
      const bool ok = t / 32 < in.allowed.size() && ((in.allowed[t / 32] >> (t % 32)) & 1u) != 0;
      if (!ok) work[t] = kMasked;
    }
  }
  if (in.num_generated < p.min_tokens) {
    std::vector<std::pair<int32_t, float>> saved;  // to undo when the constraint allows only these
    bool other_left = false;
    for (int32_t t : in.suppressed) {
      if (t >= 0 && static_cast<size_t>(t) < vocab && work[t] != kMasked) saved.push_back({t, work[t]});
    }
    for (const auto& [t, w] : saved) work[t] = kMasked;
    for (float w : work) {
      if (w != kMasked) {
        other_left = true;
        break;
      }
    }
    if (!other_left) {
      for (const auto& [t, w] : saved) work[t] = w;
    }
  }

}

SampledToken Sampler::Sample(const SamplerInput& in) {
  const SamplingParams& p = *in.params;
  const size_t vocab = in.logits.size();
  ApplyLogitProcessors(in, work_);

  int32_t chosen;
  if (p.greedy()) {
    chosen = ArgMax(work_);
  } else {
    const float inv_t = 1.0f / p.temperature;
    const float max_logit = *std::max_element(work_.begin(), work_.end());
    for (float& w : work_) w = w == kMasked ? 0.0f : std::exp((w - max_logit) * inv_t);  // unnormalised probs
    candidates_.resize(vocab);
    std::iota(candidates_.begin(), candidates_.end(), 0);
    auto by_prob = [&](int32_t a, int32_t b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
    size_t keep = vocab;
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < keep) {
      std::nth_element(candidates_.begin(), candidates_.begin() + p.top_k, candidates_.end(), by_prob);
      keep = p.top_k;
    }
    if (p.top_p < 1.0f) {
      double total = 0.0;
      for (size_t i = 0; i < keep; ++i) total += work_[candidates_[i]];
      size_t sorted = keep;
      if (keep > kTopPPreselect) {  // try the most likely tokens first; sort everything only if they fall short
        std::nth_element(candidates_.begin(), candidates_.begin() + kTopPPreselect, candidates_.begin() + keep, by_prob);
        double head = 0.0;
        for (size_t i = 0; i < kTopPPreselect; ++i) head += work_[candidates_[i]];
        if (head >= p.top_p * total) sorted = kTopPPreselect;
      }
      std::sort(candidates_.begin(), candidates_.begin() + sorted, by_prob);
      double cumulative = 0.0;
      size_t cut = 0;
      while (cut < sorted) {
        cumulative += work_[candidates_[cut++]];
        if (cumulative >= p.top_p * total) break;
      }
      keep = cut;
    }
    if (p.min_p > 0.0f) {
      float top = 0.0f;
      for (size_t i = 0; i < keep; ++i) top = std::max(top, work_[candidates_[i]]);
      const float floor = p.min_p * top;
      keep = std::partition(candidates_.begin(), candidates_.begin() + keep, [&](int32_t t) { return work_[t] >= floor; }) -
             candidates_.begin();
    }
    // A deterministic order of the kept tokens makes the draw depend only on (seed, index, logits).
    std::sort(candidates_.begin(), candidates_.begin() + keep);
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += work_[candidates_[i]];
    const double target = CounterUniform(in.seed, static_cast<uint64_t>(in.num_generated)) * total;
    double cumulative = 0.0;
    chosen = candidates_[keep - 1];
    for (size_t i = 0; i < keep; ++i) {
      cumulative += work_[candidates_[i]];
      if (cumulative > target) {
        chosen = candidates_[i];
        break;
      }
    }
  }
  if (!p.logprobs && p.top_logprobs == 0) return SampledToken{chosen, 0.0f, {}};
  return RawLogprobs(in.logits, chosen, p.top_logprobs);
}

}  // namespace arach
