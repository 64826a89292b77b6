// The body of an OpenAI chat completions request (POST /v1/chat/completions): the generation fields every
// request shares (completion_request.h; max_completion_tokens or max_tokens) and the conversation. Every error
// is INVALID_ARGUMENT "<param>: <what>" naming the OpenAI parameter ("messages[2].content").
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/chat/chat_template.h"
#include "server/chat_output/tools.h"
#include "server/http/completion_request.h"

namespace arach::server::http {

struct ChatRequest {
  GenerationFields fields;
  // messages (each with role system | developer | user | assistant | tool; content a string, null, or a list
  // of text parts, joined with "\n" into a string), tools, add_generation_prompt (default true),
  // chat_template_kwargs and documents, in the order and with the keys given (tojson keeps them).
  ChatInput input;
  bool return_prompt = false;  // arach extension: the answer carries the rendered prompt as `arach_prompt`
  std::vector<ToolSpec> tools;  // `tools`, read (input.tools keeps them as given, for the template)
  ToolChoice tool_choice;       // `tool_choice`
  bool parallel_tool_calls = true;
  // The Responses API's truncation "auto": a conversation too long for the context loses its oldest exchanges
  // (server/chat_prompt_fit.h). Chat has no such parameter.
  bool drop_oldest_exchanges_to_fit = false;
  // OpenAI's reasoning effort (server/reasoning_effort.h), set in the template's variables at the call's start, where
  // the template is known; the parameter that gave it, for its errors.
  std::optional<std::string> reasoning_effort;
  std::string reasoning_effort_field = "reasoning_effort";
  // vLLM's `chat_template`: the request's own template, parsed where the server trusts request templates
  // (ParseRequestChatTemplate); nullopt: the model's.
  std::optional<std::string> chat_template;
};

absl::StatusOr<ChatRequest> ParseChatRequest(const std::string& body);
// The same, from a body already parsed (by ParseOrderedJson, which bounds its nesting).
absl::StatusOr<ChatRequest> ChatRequestFromJson(const nlohmann::ordered_json& body);

// `add_generation_prompt` and `continue_final_message` (vLLM's: the final message is left open for the model to
// continue, a prefill) of `body` into `input` (SetTurnOpening: add_generation_prompt defaults to true, or to false
// where the final message is continued). Shared by the chat routes.
absl::Status ReadTurnOpening(const nlohmann::ordered_json& body, ChatInput& input);

// `chat_template_kwargs` of `body` (an object of extra template variables; not one the template defines itself)
// into `input.extra`; absent or null leaves it empty. Shared by the chat routes.
absl::Status ReadChatTemplateKwargs(const nlohmann::ordered_json& body, ChatInput& input);

// `documents` of `body` (vLLM's: a list of {"title", "text"} objects for templates that ground the answer in them,
// CheckDocuments) into `input.documents`; absent or null leaves it null.
absl::Status ReadDocuments(const nlohmann::ordered_json& body, ChatInput& input);

}  // namespace arach::server::http
