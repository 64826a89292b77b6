// A generation call that is one chat turn, for the two chat routes (/v1/chat/completions and /v1/responses):
// the conversation rendered with the model's chat template, the turn planned (tools, reasoning, a response
// format: chat_output/tools.h), one engine request per choice, and per choice a parser that reads the
// reasoning and tool calls out of its text where the turn has any. The routes differ only in how they write
// the answer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/chat_output/chat_output_parser.h"
#include "server/chat_prompt.h"
#include "server/http/chat_request.h"
#include "server/http/generation_call.h"
#include "server/http/token_logprobs.h"

namespace arach::server::http {

// The prompt of the chat turn `request` asks for, as the chat routes render it: with its own template where it brings
// one, its reasoning effort applied, the tools the template sees (tool_choice), its oldest exchanges dropped to fit
// where it asks, and truncate_prompt_tokens. `request.input` is left as rendered. `conversation_field`: the parameter
// that carries the conversation ("messages", "input"), named by the prompt's errors.
absl::StatusOr<ChatPrompt> RenderChatTurnPrompt(const ServiceContext& context, const Engine& engine, ChatRequest& request,
                                                const std::string& conversation_field);

class ChatTurnCall : public GenerationCall {
 public:
  // `conversation_field`: the parameter that carries the conversation ("messages", "input"), named by errors
  // of the rendered prompt.
  ChatTurnCall(ServiceContext& context, CallTicket ticket, ChatRequest request, ResolvedVariant variant, Identity identity,
               std::string conversation_field);

  // Renders the prompt, plans the turn and submits every choice.
  absl::Status Start();

 protected:
  const ChatRequest& request() const { return request_; }
  const ChatPrompt& prompt() const { return prompt_; }
  // Whether choice `index`'s text is read apart into reasoning, content and tool calls.
  bool parses(int index) const { return parsers_[static_cast<size_t>(index)].has_value(); }
  // The parts of `choice`'s pending text (clearing it), with the spans of the turn's text its content came from;
  // `final`: the turn has ended, with whatever the parser held back. Without a parser the text is all content.
  ChatOutputDelta TakeDelta(int index, Choice& choice, bool final);
  // Tool calls read out of choice `index` so far.
  int num_tool_calls(int index) const;
  // Whether the answer's text leaves special tokens out (the request's skip_special_tokens, unless the tool-call
  // marker is one).
  bool text_skips_special_tokens() const { return fields().skip_special_tokens && !plan_.keep_special_tokens; }
  // The log-probs of choice `index`, when the request asked for them.
  std::optional<ChatLogprobs>& logprobs(int index) { return logprobs_[static_cast<size_t>(index)]; }

 private:
  ChatRequest request_;
  std::string conversation_field_;
  ChatPrompt prompt_;
  ChatTurnPlan plan_;
  std::vector<std::optional<ChatLogprobs>> logprobs_;     // [choices], when asked for
  std::vector<std::optional<ChatOutputParser>> parsers_;  // [choices], where the model's reasoning or tool calls are read
  std::vector<size_t> unparsed_taken_;                    // [choices], bytes of text taken where there is no parser
};

}  // namespace arach::server::http
