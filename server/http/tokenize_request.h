// The bodies of vLLM's tokenizer routes, read (no tokenizer, no engine: the handlers in tokenize.h do the work).
// Every error is INVALID_ARGUMENT "<param>: <what>" naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/chat_request.h"

namespace arach::server::http {

// POST /tokenize: a prompt, or a conversation read as /v1/chat/completions reads it.
struct TokenizeRequest {
  std::optional<std::string> model;  // as given (the handler checks it is one the server serves)
  // {"prompt": TEXT, "add_special_tokens": true}: the text, with the tokenizer's special tokens added or not.
  std::string prompt;
  bool add_special_tokens = true;
  // {"messages", "tools", "documents", "add_generation_prompt", "continue_final_message", "chat_template_kwargs"}: the
  // conversation (its generation fields unused); nullopt for a prompt.
  std::optional<ChatRequest> chat;
  // "return_token_strs": the answer lists each token as the vocabulary writes it too ("token_strs").
  bool return_token_strs = false;
};

// `max_prompt_bytes`: the longest prompt text taken (RequestLimits::max_tokenize_bytes).
absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body, size_t max_prompt_bytes);

// POST /detokenize: {"tokens": [ids], "model"}.
struct DetokenizeRequest {
  std::optional<std::string> model;
  std::vector<int32_t> ids;  // each >= 0 (checked against the vocabulary by the handler)
};

// `max_ids`: the longest id list taken (RequestLimits::max_detokenize_ids).
absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(const std::string& body, int max_ids);

}  // namespace arach::server::http
