// Random rows of sampler input for the GPU sampling suites (logit processors and the whole device sampler): logits,
// parameters with biases, penalties, min_tokens suppression and structured-output masks drawn at random.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "engine/sampling/sampler.h"

namespace arach::testing {

struct Row {
  std::vector<float> logits;
  SamplingParams params;
  std::vector<int32_t> context, suppressed;
  std::vector<uint32_t> allowed;
  int num_generated = 0;
  SamplerInput Input() const {
    SamplerInput in;
    in.logits = logits;
    in.params = &params;
    in.context = context;
    in.num_generated = num_generated;
    in.suppressed = suppressed;
    in.allowed = allowed;
    return in;
  }
};

inline Row RandomRow(std::mt19937& rng, int vocab) {
  Row row;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int t = 0; t < vocab; ++t) row.logits.push_back(normal(rng));
  auto token = [&] { return static_cast<int32_t>(rng() % vocab); };
  const int bias_entries = static_cast<int>(rng() % 6);
  for (int i = 0; i < bias_entries; ++i) row.params.logit_bias.push_back({token(), std::uniform_real_distribution<float>(-5, 5)(rng)});
  if (rng() % 2) row.params.repetition_penalty = std::uniform_real_distribution<float>(1.0f, 1.8f)(rng);
  if (rng() % 2) row.params.presence_penalty = std::uniform_real_distribution<float>(-2, 2)(rng);
  if (rng() % 2) row.params.frequency_penalty = std::uniform_real_distribution<float>(-2, 2)(rng);
  const int context = static_cast<int>(rng() % 40);
  for (int i = 0; i < context; ++i) row.context.push_back(rng() % 4 == 0 && !row.context.empty() ? row.context.back() : token());
  row.num_generated = context == 0 ? 0 : static_cast<int>(rng() % (context + 1));
  if (rng() % 2) {
    row.params.min_tokens = row.num_generated + 1;
    for (int i = 0; i < 3; ++i) row.suppressed.push_back(token());
  }
  if (rng() % 3 == 0) {  // a structured-output mask allowing about a fifth of the vocabulary
    row.allowed.assign((vocab + 31) / 32, 0u);
    for (int t = 0; t < vocab; ++t) {
      if (rng() % 5 == 0) row.allowed[t / 32] |= 1u << (t % 32);
    }
  }
  return row;
}

}  // namespace arach::testing
