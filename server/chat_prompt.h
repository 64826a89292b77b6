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
  std::string continued;  // continue_final_message: the final message's text, which the prompt ends with; else empty
};

// OpenAI's rules on a conversation, for both APIs, on the messages as the templates see them (content a string or
// null): a role of system, developer, user, assistant or tool; content on every turn but an assistant's that calls
// tools; an assistant's tool_calls a list of {"function": {"name": a non-empty string, "arguments": a string or an
// object or its JSON text (ToolCallArguments)}, "type": "function" where given, "id": a string where given}.
// INVALID_ARGUMENT naming the field
// ("messages[1].content"; the tool calls as `tool_calls_field`: "tool_calls", gRPC's "tool_calls_json").
absl::Status CheckConversation(const nlohmann::ordered_json& messages, absl::string_view tool_calls_field);

// A tool call's arguments as the chat templates read them: a JSON object, given as one or as its text (OpenAI's
// wire form; "" for none); nullopt for anything else (text that is not a JSON object, another type).
std::optional<nlohmann::ordered_json> ToolCallArguments(const nlohmann::ordered_json& arguments);

// How the prompt ends, for both APIs: `continue_final_message` leaves the final message open for the model to
// continue (a prefill); add_generation_prompt is as given, else true unless the final message is continued. Both
// true is INVALID_ARGUMENT naming `continue_field`.
absl::Status SetTurnOpening(std::optional<bool> add_generation_prompt, bool continue_final_message, const std::string& continue_field,
                            ChatInput& input);

// `input` as `chat_template` is written to read it:
//  - the content of assistant turns that only call tools (null, as OpenAI clients send them back) as "": the
//    templates' authors write `'</think>' in message.content` and the like, which null would break (vLLM renders
//    these turns the same way);
//  - OpenAI's `developer` role (the system role of its newer models, sent by newer clients) as `system` where the
//    template never names `developer`: such a template has no branch for it and dropped the instructions from
//    the prompt without a word;
//  - each tool call's arguments as an object (ToolCallArguments), not the JSON text OpenAI clients send: templates
//    are written for transformers' convention of objects (`arguments | tojson`, `arguments.items()`; vLLM reads
//    them so too), and would write text as a quoted string or fail on it. `kText` gives them as text instead (as
//    sent, or an object's compact JSON), for the templates that splice them in as text (RenderChatPrompt).
enum class ToolArgumentsForm { kObjects, kText };
ChatInput ConversationForTemplate(const ChatInput& input, const ChatTemplate& chat_template,
                                  ToolArgumentsForm arguments_form = ToolArgumentsForm::kObjects);

// A request's own chat template (vLLM's `chat_template` request parameter), parsed with the served model's special
// tokens, to render that request's conversation in place of the model's template (the tool-call and reasoning
// syntax stay the server's). INVALID_ARGUMENT naming `field` unless `trusted` (--trust_request_chat_template: a
// template is code the server runs, if within the Jinja interpreter's bounds), for an empty one, and where it does
// not parse (the line and column, as for a served template).
absl::StatusOr<std::shared_ptr<const ChatTemplate>> ParseRequestChatTemplate(const std::string& source, bool trusted,
                                                                            const Engine& engine, const std::string& field);

// The template that renders a request's conversation: its own (`own`, ParseRequestChatTemplate; null: none), else
// the model's (null where it has none).
const ChatTemplate* ChatTemplateFor(const Engine& engine, const ChatTemplate* own);

// The prompt is rendered from ConversationForTemplate(input), with the tool calls' arguments as objects; where the
// template fails on them, as text (a template that concatenates them as strings, as DeepSeek's do). The template is
// ChatTemplateFor(engine, own_template). FAILED_PRECONDITION when there is none (start the server with
// --chat_template); else INVALID_ARGUMENT naming `field` when the template raises (its own message) or the prompt
// breaks a limit.
absl::StatusOr<ChatPrompt> RenderChatPrompt(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                            const std::string& field, const ChatTemplate* own_template = nullptr);
// INVALID_ARGUMENT naming `field` where `prompt` leaves no position to generate in the model's context (which the
// engine refuses as well); OK where it does.
absl::Status CheckPromptLeavesRoom(const Engine& engine, const ChatPrompt& prompt, const std::string& field);
// Whether an error of RenderChatPrompt or CheckPromptLeavesRoom says the prompt is too long (over --max_prompt_bytes,
// --max_prompt_tokens or the model's context), which a shorter conversation could mend, rather than that the
// conversation cannot be rendered at all.
bool IsPromptTooLong(const absl::Status& status);

// Stops generation at the end-of-turn token too (unless the request ignores end-of-sequence tokens).
void AddEndOfTurn(const ChatPrompt& prompt, SamplingParams* sampling);

}  // namespace arach::server
