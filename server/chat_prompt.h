// A chat request's prompt, for both APIs (HTTP /v1/chat/completions and gRPC Chat): the conversation rendered
// with the model's chat template and tokenized without adding special tokens (the template writes BOS and the
// turn markers itself, as transformers' apply_chat_template does), and the end-of-turn token that stops it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "server/request_limits.h"

namespace arach::server {

struct ChatPrompt {
  std::string text;                    // the rendered template
  std::vector<int32_t> ids;            // its tokens
  std::optional<int32_t> end_of_turn;  // the tokenizer's eos_token (e.g. <|im_end|>, <|eot_id|>), when it has one
};

// `input` with the content of assistant turns that only call tools (null, as OpenAI clients send them back) as
// "": the templates' authors write `'</think>' in message.content` and the like, which null would break (vLLM
// renders these turns the same way).
ChatInput WithToolCallTurnsAsText(const ChatInput& input);

// The prompt is rendered from WithToolCallTurnsAsText(input).
// FAILED_PRECONDITION when the model has no chat template (start the server with --chat_template); else
// INVALID_ARGUMENT naming `field` when the template raises (its own message) or the prompt breaks a limit.
absl::StatusOr<ChatPrompt> RenderChatPrompt(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                            const std::string& field);

// Stops generation at the end-of-turn token too (unless the request ignores end-of-sequence tokens).
void AddEndOfTurn(const ChatPrompt& prompt, SamplingParams* sampling);

}  // namespace arach::server
