// The Responses API's `truncation: "auto"`: a conversation longer than the model's context (or the server's prompt
// limits) loses its oldest exchanges until its prompt fits, as OpenAI drops input items from the beginning of the
// conversation. An exchange is a user message and every message after it up to the next user message (the
// assistant's answers, its tool calls and their results), so a call never loses its result nor a result its call;
// the system messages before the first user message (the instructions) always stay, and so does the last exchange.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "server/chat_prompt.h"
#include "server/request_limits.h"

namespace arach::server {

// How many exchanges `input` could lose: one less than its user messages (0 when it has at most one).
int DroppableExchanges(const ChatInput& input);

// `input` without its `dropped` oldest exchanges (0 <= dropped <= DroppableExchanges(input)); the messages before the
// first user message stay where they are system or developer messages.
ChatInput WithoutOldestExchanges(const ChatInput& input, int dropped);

// The prompt RenderChatPrompt renders for `input` where it fits: within --max_prompt_bytes and --max_prompt_tokens,
// with room for one token in the model's context. Where it does not, the prompt of `input` without the fewest
// oldest exchanges that make it fit (a binary search: about log2(exchanges) renders), their number in *dropped
// (where given). The error of the conversation reduced to its last exchange where even that does not fit, and any
// error that is not the prompt's length as RenderChatPrompt gives it.
absl::StatusOr<ChatPrompt> RenderChatPromptToFit(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                                 const std::string& field, int* dropped = nullptr,
                                                 const ChatTemplate* own_template = nullptr);

}  // namespace arach::server
