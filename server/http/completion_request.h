// The body of an OpenAI completions request (POST /v1/completions), read field by field: every error is
// INVALID_ARGUMENT "<param>: <what>" naming the OpenAI parameter, so that the HTTP layer can report it
// in OpenAI's error shape. Values are checked for type here and for range by the engine's own
// validation (engine/request.h), under the same parameter names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sampling/sampling_params.h"
#include "nlohmann/json.hpp"
#include "server/http/structured_output_request.h"
#include "server/variant_resolver.h"

namespace arach::server::http {

// One prompt: text (tokenized by the server) or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

// What every generation request shares, completions and chat alike.
struct GenerationFields {
  std::string model;           // NAME or NAME:VARIANT (required)
  int n = 1;                   // choices per prompt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM's): every chunk carries its choice's usage
  std::optional<int> logprobs;  // alternatives per token (0..20); set: log-probs are returned
  // vLLM's prompt_logprobs: each prompt token's log-prob and rank, with this many alternatives (0..20); whole
  // answers only (refused with stream).
  std::optional<int> prompt_logprobs;
  // vLLM's truncate_prompt_tokens: each prompt keeps its last k tokens (-1: the model's context; >= 1 otherwise).
  std::optional<int> truncate_prompt_tokens;
  // vLLM's return_token_ids: each choice (chunk) lists its generated token ids ("token_ids") and the prompt's
  // ("prompt_token_ids", in the first chunk when streamed).
  bool return_token_ids = false;
  // vLLM's return_tokens_as_token_ids: log-prob entries name their tokens "token_id:<id>".
  bool return_tokens_as_token_ids = false;
  SamplingParams sampling;     // temperature, top_p, ... with max_tokens and stop
  bool max_tokens_given = false;  // else max_tokens is 16 (completions) or chat's DefaultChatMaxTokens
  RequestedVariant variant;  // arach, arach_offset, skip; experiment_key (else `user`, else `safety_identifier`)
  bool skip_special_tokens = true;  // leave special tokens out of the text (as vLLM does)
  bool diagnostics = false;         // each choice reports where its prompt's attention went (arach_attention)
  std::optional<int> priority;      // lower first (vLLM's `priority`); default: the API key's, else 0
  RequestedConstraint structured_output;  // response_format / structured_outputs
  // vLLM's cache_salt: the prefix-cache namespace of the request's prompts (EngineRequest::cache_salt); empty: shared.
  std::string cache_salt;
  // OpenAI's predicted outputs (prediction.content): the text each choice is expected to be, mostly; drafted from
  // (EngineRequest::prediction), usage reports how much of it was kept.
  std::optional<std::string> prediction;
};

struct CompletionRequest {
  GenerationFields fields;
  std::vector<PromptInput> prompts;  // `prompt`: a string, ids, or a list of either (one choice set each)
  bool echo = false;                 // the prompt is part of each choice's text (and log-probs)
  // OpenAI's suffix: the text after the gap each (text) prompt is the text before; the model writes the gap
  // (server/fill_in_middle.h). nullopt (or ""): none.
  std::optional<std::string> suffix;
  bool score_only = false;           // max_tokens 0 with echo: the prompt's log-probs, nothing generated
};

// Parses a completions body (types and shapes; the API's limits and the engine check the values). Parameters
// the route does not know or implement are refused (request_fields.h).
absl::StatusOr<CompletionRequest> ParseCompletionRequest(const std::string& body);

// Reads the fields every generation request shares from `body` (an object), chat and completions alike.
// `max_tokens_keys`: the parameter names that may carry max_tokens, first one wins.
absl::StatusOr<GenerationFields> ParseGenerationFields(const nlohmann::json& body, const std::vector<std::string>& max_tokens_keys);

// The prompts of parameter `param` of `body` (completions' `prompt`, embeddings' `input`): a string, token ids, or
// a non-empty list of either.
absl::StatusOr<std::vector<PromptInput>> ReadPromptInputs(const nlohmann::json& body, const std::string& param);

// The OpenAI parameter that an engine field stands for ("top_logprobs" -> "logprobs", "variant" -> "model").
std::string OpenAiFieldName(absl::string_view engine_field);

}  // namespace arach::server::http
