// The body of an OpenAI Responses API request (POST /v1/responses), read as the chat turn it asks for: the
// `instructions` as a system message and the `input` (a string, or a list of items: messages, function calls,
// function call outputs, reasoning) as the conversation, the flat function `tools` in chat's shape, `text.format`
// as the response format, max_output_tokens as max_tokens. previous_response_id continues a stored response (its
// conversation and output come before `input`; its instructions do not); other stored state (conversation, item
// references) is refused. Every error is INVALID_ARGUMENT "<param>: <what>" naming the Responses API's own
// parameter ("input[2].content[0].type").
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/http/chat_request.h"

namespace arach::server::http {

struct ResponsesRequest {
  ChatRequest chat;  // the turn as /v1/chat/completions takes it (n 1)
  bool store = true;  // `store` (OpenAI's default: true)
  // `background`: answered at once (as queued, or streamed), run to its end apart, fetched from the store (needs store)
  bool background = false;
  std::optional<std::string> previous_response_id;
  // The input items the turn answers: the previous response's conversation and output, then `input` (a string as
  // a user message item); what a stored response keeps for the next turn.
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  size_t input_start = 0;  // where `input`'s items begin in `conversation` (after the previous response's)
  // What the response object repeats of the request, as given or with OpenAI's defaults: instructions,
  // max_output_tokens, max_tool_calls, metadata, parallel_tool_calls, temperature, text, tool_choice, tools, top_p,
  // truncation, user.
  nlohmann::json echo;
};

// The conversation a stored response ended with (its conversation, then its output items), by id: NOT_FOUND where
// none is stored under that id for this caller.
using StoredConversation = std::function<absl::StatusOr<nlohmann::ordered_json>(const std::string& response_id)>;

// `stored`: how previous_response_id is looked up; null where nothing is stored (previous_response_id is refused).
absl::StatusOr<ResponsesRequest> ParseResponsesRequest(const std::string& body, const StoredConversation& stored = nullptr);

// The body of POST /v1/responses/input_tokens (OpenAI's count of a request's input tokens): the parameters that shape
// the prompt, read as ParseResponsesRequest reads them (model, input, instructions, tools, tool_choice,
// parallel_tool_calls, previous_response_id, reasoning, text, truncation, conversation, and chat_template_kwargs); any
// other (sampling, store, stream...) is INVALID_ARGUMENT naming it, since counting does not use it.
absl::StatusOr<ResponsesRequest> ParseResponseInputTokensRequest(const std::string& body, const StoredConversation& stored = nullptr);

}  // namespace arach::server::http
