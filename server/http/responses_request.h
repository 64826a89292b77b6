// The body of an OpenAI Responses API request (POST /v1/responses), read as the chat turn it asks for: the
// `instructions` as a system message and the `input` (a string, or a list of items: messages, function calls,
// function call outputs, reasoning) as the conversation, the flat function `tools` in chat's shape, `text.format`
// as the response format, max_output_tokens as max_tokens. Nothing is stored: a request that refers to stored
// state (previous_response_id, conversation, item references) is refused. Every error is INVALID_ARGUMENT
// "<param>: <what>" naming the Responses API's own parameter ("input[2].content[0].type").
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/http/chat_request.h"

namespace arach::server::http {

struct ResponsesRequest {
  ChatRequest chat;  // the turn as /v1/chat/completions takes it (n 1)
  // What the response object repeats of the request, as given or with OpenAI's defaults: instructions,
  // max_output_tokens, metadata, parallel_tool_calls, temperature, text, tool_choice, tools, top_p, user.
  nlohmann::json echo;
};

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(const std::string& body);

}  // namespace arach::server::http
