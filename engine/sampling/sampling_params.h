// How a request's tokens are chosen and when its generation stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/field_error.h"

namespace arach {

struct SamplingParams {
  static constexpr int kMaxTopLogprobs = 20;
  static constexpr int kMaxLogitBias = 300;  // entries of logit_bias

  float temperature = 1.0f;         // 0 = greedy
  int top_k = 0;                    // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;               // keep the smallest set with this much probability; 1 = all
  float min_p = 0.0f;               // drop tokens below min_p x the top probability; 0 = none
  float repetition_penalty = 1.0f;  // > 1 discourages tokens already in the prompt or output (HF rule)
  float presence_penalty = 0.0f;    // [-2, 2]: subtracted once from a token generated at least once (OpenAI)
  float frequency_penalty = 0.0f;   // [-2, 2]: subtracted per time a token was generated (OpenAI)
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias in [-100, 100] added to its logit
  std::optional<uint64_t> seed;     // same seed, same tokens, whatever else is in the batch
  std::vector<int32_t> allowed_token_ids;  // vLLM's: only these may be sampled (empty: every token); token_filter.h
  std::vector<std::string> bad_words;      // vLLM's: never generated (the Engine tokenizes them; token_filter.h)

  int max_tokens = 16;              // tokens to generate at most (>= 1)
  int min_tokens = 0;               // stop tokens are suppressed until this many were generated
  std::vector<std::string> stop;    // stop strings (the text ends before the first one)
  bool include_stop_str_in_output = false;  // ... or with it: the text ends after the stop string (vLLM's name)
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;          // do not stop at the model's end-of-sequence tokens
  bool skip_special_tokens = true;  // leave special tokens (<|eot_id|>, </s>, ...) out of the text

  bool logprobs = false;            // return each generated token's log-prob (raw model distribution)
  int top_logprobs = 0;             // ... and this many most likely alternatives (0..20)
  bool prompt_logprobs = false;     // also return log p(prompt[t] | prompt[<t]) (prompt perplexity)

  // INVALID_ARGUMENT naming the field (as `names` calls it) when a value is out of range.
  absl::Status Validate(int vocab_size, FieldNames names = EngineFieldName) const;
  bool greedy() const { return temperature == 0.0f; }
};

}  // namespace arach
