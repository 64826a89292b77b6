// Log-probabilities read off a row of logits: the most likely token, log softmax at a token, and the
// top-n alternatives. Used by sampling, scoring and the offline tools.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace arach {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0f;              // log-prob of `token` under the raw model distribution (when asked)
  std::vector<TokenLogprob> top;     // the top_logprobs most likely tokens, raw distribution
};

// The largest value (NaNs ignored; -inf when there is none).
float MaxLogit(std::span<const float> values);
// Index of the largest value (the first one on ties).
int32_t ArgMax(std::span<const float> values);
// 1 + the number of values greater than values[index]: the token's rank in the vocabulary (1 = most likely).
int32_t RankOf(std::span<const float> values, int32_t index);
// log(sum(exp(values))): each term in float32 relative to the largest value (vectorised), blocks of them summed in
// double precision.
double LogSumExp(std::span<const float> values);
// log softmax(values)[index] = values[index] - LogSumExp(values).
double LogSoftmaxAt(std::span<const float> values, int32_t index);
// log softmax(logits)[token] and the `n` most likely tokens with their log-probs.
SampledToken RawLogprobs(std::span<const float> logits, int32_t token, int n);

// What scoring keeps of a row of logits against the token that follows it (prompt log-probs, ranks, greedy flags).
struct RowScore {
  float logprob = 0.0f;  // log softmax(row)[target]; 0 where there is no target
  int32_t argmax = 0;    // ArgMax(row)
  int32_t rank = 0;      // RankOf(row, target); 0 where there is no target
};
// `logits` scored against `target` (< 0: no target), and into `top` (when not empty; at most the vocabulary) its
// top.size() most likely tokens with their log-probs, most likely first, the lower id first among equals (as
// RawLogprobs' alternatives): the reference of Backend::ScoreRows.
RowScore ScoreRow(std::span<const float> logits, int32_t target, std::span<TokenLogprob> top = {});

}  // namespace arach
