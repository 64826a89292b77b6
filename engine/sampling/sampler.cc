#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/random.h"
#include "engine/sampling/vector_math.h"

namespace arach {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// Whether ApplyLogitProcessors may change a logit of this input (else the raw logits are read as they are, with
// no copy of the row). A processor added there needs its condition here too.
bool ProcessesLogits(const SamplerInput& in) {
  const SamplingParams& p = *in.params;
  return !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f ||
         !in.allowed.empty() || (in.num_generated < p.min_tokens && !in.suppressed.empty());
}

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
  std::span<const float> logits = in.logits;  // [vocab] after the processors
  if (ProcessesLogits(in)) {
    ApplyLogitProcessors(in, work_);
    logits = work_;
  }
  int32_t chosen;
  if (p.greedy()) {
    chosen = ArgMax(logits);
  } else {
    const float inv_t = 1.0f / p.temperature;
    // Unnormalised probabilities (vector expf) into work_ (in place where the processors wrote it): masked tokens'
    // -inf gives 0, also where every token is masked.
    const float max_logit = std::max(MaxLogit(logits), std::numeric_limits<float>::lowest());
    const size_t vocab = logits.size();
    work_.resize(vocab);  // (the same size every call: written once)
    const float* in_logits = logits.data();
    float* probs = work_.data();
#pragma omp simd
    for (size_t t = 0; t < vocab; ++t) probs[t] = expf((in_logits[t] - max_logit) * inv_t);
    const std::span<const int32_t> kept = selection_.Keep(work_, p.top_k, p.top_p, p.min_p);
    chosen = selection_.Draw(work_, kept, CounterUniform(in.seed, static_cast<uint64_t>(in.num_generated)));
  }
  if (!p.logprobs && p.top_logprobs == 0 && !in.wants_logprob) return SampledToken{chosen, 0.0f, {}};
  return RawLogprobs(in.logits, chosen, p.top_logprobs);
}

}  // namespace arach
