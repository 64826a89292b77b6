#include "server/chat_prompt.h"

#include <algorithm>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/json_body.h"
#include "server/request_limits.h"

namespace arach::server {

namespace {

// Marks RenderChatPrompt's errors about the prompt's length (IsPromptTooLong).
constexpr char kPromptTooLongPayload[] = "type.arach.dev/arach.PromptTooLong";

absl::Status PromptTooLong(absl::Status status) {
  status.SetPayload(kPromptTooLongPayload, absl::Cord());
  return status;
}

absl::Status CheckToolCalls(const nlohmann::ordered_json& calls, const std::string& field) {
  if (!calls.is_array()) return InvalidField(field, "must be a list");
  for (size_t k = 0; k < calls.size(); ++k) {
    const nlohmann::ordered_json& call = calls[k];
    const std::string at = absl::StrCat(field, "[", k, "]");
    if (!call.is_object()) return InvalidField(at, "must be an object");
    if (const auto id = call.find("id"); id != call.end() && !id->is_null() && !id->is_string()) return InvalidField(at + ".id", "must be a string");
    if (const auto type = call.find("type"); type != call.end() && !type->is_null() && *type != "function") {
      return InvalidField(at + ".type", "must be \"function\"");
    }
    const auto function = call.find("function");
    if (function == call.end() || !function->is_object()) return InvalidField(at + ".function", "is required (an object)");
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get<std::string>().empty()) {
      return InvalidField(at + ".function.name", "is required (a non-empty string)");
    }
    const auto arguments = function->find("arguments");
    if (arguments == function->end() || !ToolCallArguments(*arguments)) {
      return InvalidField(at + ".function.arguments", "is required: a JSON object or its text");
    }
  }
  return absl::OkStatus();
}

// Whether an assistant turn of `input` calls tools.
bool CallsTools(const ChatInput& input) {
  for (const auto& message : input.messages) {
    const auto calls = message.find("tool_calls");
    if (calls != message.end() && calls->is_array() && !calls->empty()) return true;
  }
  return false;
}

}  // namespace

std::optional<nlohmann::ordered_json> ToolCallArguments(const nlohmann::ordered_json& arguments) {
  if (arguments.is_object()) return arguments;
  if (!arguments.is_string()) return std::nullopt;
  const std::string& text = arguments.get_ref<const std::string&>();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return nlohmann::ordered_json::object();
  absl::StatusOr<nlohmann::ordered_json> parsed = ParseOrderedJson(text, "arguments");  // nesting bounded
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  return std::move(*parsed);
}

absl::Status CheckConversation(const nlohmann::ordered_json& messages, absl::string_view tool_calls_field) {
  if (!messages.is_array() || messages.empty()) return InvalidField("messages", "is required (a non-empty list)");
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::ordered_json& message = messages[i];
    const std::string at = absl::StrCat("messages[", i, "]");
    const std::string role = message.value("role", "");
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool") {
      return InvalidField(at + ".role", absl::StrCat("'", role, "' is not system, developer, user, assistant or tool"));
    }
    const auto calls = message.find("tool_calls");
    const bool has_calls = calls != message.end() && !calls->is_null();
    if (has_calls) {
      if (role != "assistant") return InvalidField(absl::StrCat(at, ".", tool_calls_field), "is only for assistant turns");
      ARACH_RETURN_IF_ERROR(CheckToolCalls(*calls, absl::StrCat(at, ".", tool_calls_field)));
    }
    const auto content = message.find("content");
    if ((content == message.end() || content->is_null()) && !(has_calls && !calls->empty())) {
      return InvalidField(at + ".content", role == "assistant" ? "is required unless the turn has tool calls" : "is required");
    }
  }
  return absl::OkStatus();
}

absl::Status SetTurnOpening(std::optional<bool> add_generation_prompt, bool continue_final_message, const std::string& continue_field,
                            ChatInput& input) {
  input.continue_final_message = continue_final_message;
  input.add_generation_prompt = add_generation_prompt.value_or(!continue_final_message);
  if (continue_final_message && input.add_generation_prompt) {
    return InvalidField(continue_field, "cannot be combined with add_generation_prompt true (the final message is continued, no "
                                        "new turn is opened)");
  }
  return absl::OkStatus();
}

ChatInput ConversationForTemplate(const ChatInput& input, const ChatTemplate& chat_template, ToolArgumentsForm arguments_form) {
  ChatInput out = input;
  const bool reads_developer = chat_template.SourceFor(!input.tools.is_null()).find("developer") != std::string::npos;
  for (auto& message : out.messages) {
    if (!reads_developer && message.value("role", "") == "developer") message["role"] = "system";
    const auto calls = message.find("tool_calls");
    if (message.value("role", "") != "assistant" || calls == message.end() || !calls->is_array()) continue;
    if (message["content"].is_null() && !calls->empty()) message["content"] = "";
    for (auto& call : *calls) {
      const auto function = call.find("function");
      if (function == call.end() || !function->is_object()) continue;
      const auto arguments = function->find("arguments");
      if (arguments == function->end()) continue;
      if (arguments_form == ToolArgumentsForm::kText) {
        if (arguments->is_object()) *arguments = arguments->dump();
      } else if (std::optional<nlohmann::ordered_json> object = ToolCallArguments(*arguments)) {
        *arguments = std::move(*object);
      }
    }
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const ChatTemplate>> ParseRequestChatTemplate(const std::string& source, bool trusted,
                                                                            const Engine& engine, const std::string& field) {
  if (!trusted) {
    return InvalidField(field, "a request's own chat template is refused here: the server renders its model's template "
                               "(start it with --trust_request_chat_template to accept them)");
  }
  if (source.empty()) return InvalidField(field, "is empty (leave it out for the model's template)");
  absl::StatusOr<std::shared_ptr<const ChatTemplate>> parsed = ChatTemplate::Parse(source, engine.tokenizer().config(), field);
  if (parsed.ok()) return parsed;
  // "<field>: chat template: line L, column C: ..." (a served template's origin is its file): the field says which.
  absl::string_view message = parsed.status().message();
  if (absl::ConsumePrefix(&message, absl::StrCat(field, ": chat template: "))) return InvalidField(field, message);
  return parsed.status();
}

const ChatTemplate* ChatTemplateFor(const Engine& engine, const ChatTemplate* own) {
  return own != nullptr ? own : engine.chat_template();
}

absl::StatusOr<ChatPrompt> RenderChatPrompt(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                            const std::string& field, const ChatTemplate* own_template) {
  const ChatTemplate* chat_template = ChatTemplateFor(engine, own_template);
  if (chat_template == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": the model has no chat template (tokenizer_config.json has no chat_template); start the server with "
               "--chat_template FILE, or use the completions API"));
  }
  ChatPrompt prompt;
  const ChatInput conversation = ConversationForTemplate(input, *chat_template);
  absl::StatusOr<std::string> text = chat_template->Render(conversation);
  if (!text.ok() && CallsTools(input)) {
    // A template that splices the arguments into the prompt as text (DeepSeek's: '...' + arguments) fails on objects;
    // it gets them as text. (Its first error stands where this fails too.)
    absl::StatusOr<std::string> as_text = chat_template->Render(ConversationForTemplate(input, *chat_template, ToolArgumentsForm::kText));
    if (as_text.ok()) text = std::move(as_text);
  }
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", text.status().message()));
  prompt.text = std::move(*text);
  if (conversation.continue_final_message && !conversation.messages.empty()) {
    const auto content = conversation.messages.back().find("content");
    if (content != conversation.messages.back().end() && content->is_string()) prompt.continued = content->get<std::string>();
  }
  if (prompt.text.size() > limits.max_prompt_bytes) {
    return PromptTooLong(absl::InvalidArgumentError(absl::StrCat(field, ": the rendered prompt's ", prompt.text.size(),
                                                                 " bytes exceed the limit of ", limits.max_prompt_bytes)));
  }
  absl::StatusOr<std::vector<int32_t>> ids = engine.tokenizer().Encode(prompt.text, /*add_special_tokens=*/false);
  if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", ids.status().message()));
  if (ids->empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": the rendered prompt is empty"));
  if (absl::Status tokens = CheckPromptTokens(limits, field, ids->size()); !tokens.ok()) return PromptTooLong(std::move(tokens));
  prompt.ids = std::move(*ids);
  if (const std::optional<std::string>& eos = engine.tokenizer().config().eos_token; eos) {
    prompt.end_of_turn = engine.tokenizer().TokenToId(*eos);
  }
  return prompt;
}

absl::Status CheckPromptLeavesRoom(const Engine& engine, const ChatPrompt& prompt, const std::string& field) {
  absl::Status fits = CheckPromptFitsContext(prompt.ids.size(), RequestKind::kGenerate, engine.model_config(), field);
  return fits.ok() ? fits : PromptTooLong(std::move(fits));
}

bool IsPromptTooLong(const absl::Status& status) { return status.GetPayload(kPromptTooLongPayload).has_value(); }

void AddEndOfTurn(const ChatPrompt& prompt, SamplingParams* sampling) {
  if (sampling->ignore_eos || !prompt.end_of_turn) return;
  std::vector<int32_t>& stops = sampling->stop_token_ids;
  if (std::find(stops.begin(), stops.end(), *prompt.end_of_turn) == stops.end()) stops.push_back(*prompt.end_of_turn);
}

}  // namespace arach::server
