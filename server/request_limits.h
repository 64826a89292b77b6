// Size limits on request fields, checked before any work (INVALID_ARGUMENT naming the field), and the
// encoding of a text prompt within them: what both APIs check before a request reaches the engine (which
// validates the rest, engine/request.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/api_keys.h"

namespace arach::server {

struct RequestLimits {
  size_t max_prompt_bytes = 1 << 20;  // prompt.text / score input text
  size_t max_tokenize_bytes = 8 << 20;  // one text of a Tokenize request (whole evaluation corpora)
  int max_detokenize_ids = 1 << 20;     // one id list of a Detokenize request
  int max_stop_strings = 16;
  size_t max_stop_bytes = 256;        // each stop string
  int max_stop_token_ids = 64;
  int max_bad_words = 64;             // vLLM's bad_words
  size_t max_bad_word_bytes = 256;    // each bad word
  int max_score_inputs = 64;
  int max_prompts_per_request = 16;   // prompts of one completions request (a list of prompts)
  int max_tokens = 4096;              // max_tokens of one request
  int max_prompt_tokens = 0;          // prompt tokens of one request or score input (0 = the model's context)
  size_t max_response_bytes = 16 << 20;  // a non-streamed HTTP answer, built whole in memory (CheckAnswerLogprobs);
                                         // the same flag bounds a gRPC message (GrpcOptions::max_response_bytes)
};

// API limits on a prompt's length in tokens (the engine checks the model's context); errors name `field`.
absl::Status CheckPromptTokens(const RequestLimits& limits, const std::string& field, size_t count);

// The API's limits on max_tokens, stop strings, stop token ids and bad words (INVALID_ARGUMENT naming the field).
absl::Status CheckSamplingLimits(const RequestLimits& limits, const SamplingParams& sampling, FieldNames names = EngineFieldName);

// A non-streamed answer is built whole in memory: INVALID_ARGUMENT naming `field` when the log-probs that
// `requests` ask for (each prompt's, when scored, and each generated token's, with their alternatives) would
// take more than limits.max_response_bytes at kMinBytesPerLogprob each, before any work (one request asking
// 20 alternatives for 16 long echoed prompts made a 124 MB answer and took 3.5 GB to build). A stream (`streamed`) is
// written a chunk at a time, but a choice's first chunk holds its whole prompt's log-probs (echo with logprobs): each
// such chunk is held to the same limit.
inline constexpr int64_t kMinBytesPerLogprob = 16;  // `"w":-1.234567,` and up: a lower bound, so no answer under the limit is refused
absl::Status CheckAnswerLogprobs(const RequestLimits& limits, const std::vector<EngineRequest>& requests, const std::string& field,
                                 bool streamed = false);

// The max_tokens of a chat turn that sets none: as OpenAI's and vLLM's, the answer runs until it ends, so it may
// take the rest of the context and of the KV pool (Engine::MaxNewTokens) within the API's max_tokens limit and,
// for a key with a tokens-per-minute budget, within what that budget leaves beside the prompt of each of the
// request's `choices` (n) (a key is not refused for a number its client never sent). At least 1 (the checks that
// follow then say what is too long).
int DefaultChatMaxTokens(const RequestLimits& limits, const Engine& engine, const KeyLimits& key, size_t prompt_tokens, int choices);

// The token ids of a prompt text (tokenized, BOS per the tokenizer's convention) within the API's limits;
// errors name `field`.
absl::StatusOr<std::vector<int32_t>> EncodeTextPrompt(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                                      const std::string& text);

// The token ids of a prediction's text (OpenAI's predicted outputs) as the output would spell them: no special tokens
// added. Errors name `prediction`.
absl::StatusOr<std::vector<int32_t>> EncodePrediction(const Engine& engine, const std::string& text);

// vLLM's truncate_prompt_tokens: keeps the last `keep` ids of `ids` (left truncation; -1: as many as the model's
// context of `max_model_len` holds); nullopt keeps them all. INVALID_ARGUMENT naming truncate_prompt_tokens when
// `keep` exceeds the context. Whether any were dropped.
absl::StatusOr<bool> TruncatePrompt(std::optional<int> keep, int max_model_len, std::vector<int32_t>& ids);

}  // namespace arach::server
