#include "server/chat_prompt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/request_limits.h"

namespace arach::server {

ChatInput WithToolCallTurnsAsText(const ChatInput& input) {
  ChatInput out = input;
  for (auto& message : out.messages) {
    const auto calls = message.find("tool_calls");
    if (message.value("role", "") == "assistant" && message["content"].is_null() && calls != message.end() && !calls->empty()) {
      message["content"] = "";
    }
  }
  return out;
}

absl::StatusOr<ChatPrompt> RenderChatPrompt(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                            const std::string& field) {
  const ChatTemplate* chat_template = engine.chat_template();
  if (chat_template == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": the model has no chat template (tokenizer_config.json has no chat_template); start the server with "
               "--chat_template FILE, or use the completions API"));
  }
  ChatPrompt prompt;
  absl::StatusOr<std::string> text = chat_template->Render(WithToolCallTurnsAsText(input));
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", text.status().message()));
  prompt.text = std::move(*text);
  if (prompt.text.size() > limits.max_prompt_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the rendered prompt's ", prompt.text.size(),
                                                   " bytes exceed the limit of ", limits.max_prompt_bytes));
  }
  absl::StatusOr<std::vector<int32_t>> ids = engine.tokenizer().Encode(prompt.text, /*add_special_tokens=*/false);
  if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", ids.status().message()));
  if (ids->empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": the rendered prompt is empty"));
  ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits, field, ids->size()));
  prompt.ids = std::move(*ids);
  if (const std::optional<std::string>& eos = engine.tokenizer().config().eos_token; eos) {
    prompt.end_of_turn = engine.tokenizer().TokenToId(*eos);
  }
  return prompt;
}

void AddEndOfTurn(const ChatPrompt& prompt, SamplingParams* sampling) {
  if (sampling->ignore_eos || !prompt.end_of_turn) return;
  std::vector<int32_t>& stops = sampling->stop_token_ids;
  if (std::find(stops.begin(), stops.end(), *prompt.end_of_turn) == stops.end()) stops.push_back(*prompt.end_of_turn);
}

}  // namespace arach::server
