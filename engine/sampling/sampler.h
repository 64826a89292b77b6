// Chooses the next token of a sequence from its logits: logit bias, repetition penalty, presence and
// frequency penalties (on the generated tokens), stop-token suppression (min_tokens), the structured-output
// mask, then greedy, or temperature -> top-k -> top-p -> min-p -> a draw from a counter-based generator keyed
// by (seed, token index), so a seeded request samples the same tokens in any batch. Log-probs are those of the
// raw model distribution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/token_selection.h"

namespace arach {

struct SamplerInput {
  std::span<const float> logits;         // [vocab]
  const SamplingParams* params = nullptr;
  std::span<const int32_t> context;      // prompt + generated tokens (repetition penalty)
  int num_generated = 0;                 // tokens generated so far (RNG counter, min_tokens)
  uint64_t seed = 0;                     // the request's seed (given or drawn at submission)
  std::span<const int32_t> suppressed;   // token ids masked while num_generated < min_tokens
  // Structured output: the tokens allowed now, one bit each (bit t of word t / 32); empty: all. The others are
  // masked after the penalties; where that leaves nothing (min_tokens suppressing the only allowed stop token),
  // the constraint wins over min_tokens.
  std::span<const uint32_t> allowed;
  // Return the chosen token's log-prob even where the request asks for none (the quality metrics').
  bool wants_logprob = false;
};

// The logit processors, in Sample's order, into `work` ([vocab]): logit bias, repetition penalty (each distinct
// context token once), presence / frequency penalties (generated tokens), the structured-output mask, min_tokens
// suppression (undone where it would leave nothing). Masked tokens are -inf. The GPU's kernel
// (engine/backend/cuda/cuda_logit_processing.cu) is tested against this.
void ApplyLogitProcessors(const SamplerInput& input, std::vector<float>& work);

class Sampler {
 public:
  // Picks the next token. Reuses internal scratch: one Sampler per thread.
  SampledToken Sample(const SamplerInput& input);

 private:
  std::vector<float> work_;    // [vocab] processed logits, then their unnormalised probabilities
  TokenSelection selection_;  // top-k / top-p / min-p and the draw
};

}  // namespace arach
