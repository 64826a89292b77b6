#include "server/http/chat_request.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/chat_prompt.h"
#include "server/http/content_parts.h"
#include "server/http/request_fields.h"
#include "server/reasoning_effort.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using ordered_json = nlohmann::ordered_json;

absl::StatusOr<ordered_json> ReadMessages(const ordered_json& body) {
  const auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) return InvalidField("messages", "is required (a non-empty list)");
  ordered_json messages = ordered_json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const ordered_json& message = (*it)[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!message.is_object()) return InvalidField(param, "must be an object");
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string()) return InvalidField(absl::StrCat(param, ".role"), "is required (a string)");
    ordered_json normalized = message;
    const auto content = message.find("content");
    if (content == message.end()) {
      normalized["content"] = nullptr;
    } else {
      ARACH_ASSIGN_OR_RETURN(normalized["content"], NormalizeContent(*content, absl::StrCat(param, ".content")));
    }
    messages.push_back(std::move(normalized));
  }
  ARACH_RETURN_IF_ERROR(CheckConversation(messages, "tool_calls"));  // roles, content, tool calls
  return messages;
}

}  // namespace

absl::Status ReadTurnOpening(const ordered_json& body, ChatInput& input) {
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> add_generation_prompt, OptionalBoolAt(body, "add_generation_prompt"));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> continue_final_message, OptionalBoolAt(body, "continue_final_message"));
  return SetTurnOpening(add_generation_prompt, continue_final_message.value_or(false), "continue_final_message", input);
}

absl::Status ReadChatTemplateKwargs(const ordered_json& body, ChatInput& input) {
  const auto kwargs = body.find("chat_template_kwargs");
  if (kwargs == body.end() || kwargs->is_null()) return absl::OkStatus();
  if (!kwargs->is_object()) return InvalidField("chat_template_kwargs", "must be an object");
  ARACH_RETURN_IF_ERROR(CheckExtraTemplateVariables(*kwargs, "chat_template_kwargs"));
  input.extra = *kwargs;
  return absl::OkStatus();
}

absl::Status ReadDocuments(const ordered_json& body, ChatInput& input) {
  const auto documents = body.find("documents");
  if (documents == body.end() || documents->is_null()) return absl::OkStatus();
  ARACH_RETURN_IF_ERROR(CheckDocuments(*documents, "documents"));
  input.documents = *documents;
  return absl::OkStatus();
}

absl::StatusOr<ChatRequest> ParseChatRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const ordered_json body, ParseOrderedJson(body_text, "body"));
  return ChatRequestFromJson(body);
}

absl::StatusOr<ChatRequest> ChatRequestFromJson(const ordered_json& body) {
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ChatRequest request;
  const nlohmann::json plain(body);  // the same body, for the shared fields
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(plain, OpenAiRoute::kChatCompletions));
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(plain, {"max_completion_tokens", "max_tokens"}));
  ARACH_ASSIGN_OR_RETURN(request.input.messages, ReadMessages(body));
  ARACH_ASSIGN_OR_RETURN(request.tools, ParseTools(plain.value("tools", nlohmann::json()), "tools"));
  if (!request.tools.empty()) request.input.tools = body["tools"];  // as given, in its key order, for the template
  ARACH_ASSIGN_OR_RETURN(request.tool_choice, ParseToolChoice(plain.value("tool_choice", nlohmann::json()), request.tools, "tool_choice"));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> parallel, OptionalBoolAt(plain, "parallel_tool_calls"));
  request.parallel_tool_calls = parallel.value_or(true);
  ARACH_RETURN_IF_ERROR(ReadTurnOpening(body, request.input));
  ARACH_RETURN_IF_ERROR(ReadChatTemplateKwargs(body, request.input));
  ARACH_RETURN_IF_ERROR(ReadDocuments(body, request.input));
  ARACH_ASSIGN_OR_RETURN(request.reasoning_effort, ReadReasoningEffort(plain.value("reasoning_effort", nlohmann::json()), "reasoning_effort"));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> return_prompt, OptionalBoolAt(body, "return_prompt"));
  request.return_prompt = return_prompt.value_or(false);
  if (const auto own = body.find("chat_template"); own != body.end() && !own->is_null()) {
    if (!own->is_string()) return InvalidField("chat_template", "must be a string (a Jinja chat template)");
    request.chat_template = own->get<std::string>();
  }
  if (const auto echo = body.find("echo"); echo != body.end() && echo->is_boolean() && echo->get<bool>()) {
    return InvalidField("echo", "is not supported for chat (use return_prompt to see the rendered prompt)");
  }
  return request;
}

}  // namespace arach::server::http
