#include "server/http/tokenize_request.h"

#include <algorithm>
#include <climits>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using ordered_json = nlohmann::ordered_json;

// OK, or the first key of `body` that is not one of `known`.
absl::Status CheckKeys(const ordered_json& body, std::initializer_list<absl::string_view> known) {
  for (const auto& item : body.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) return KeyError("", item.key(), "is not a known parameter");
  }
  return absl::OkStatus();
}

// The body as an object, and its `model` (a string, when given).
absl::StatusOr<ordered_json> ReadBody(const std::string& body_text, std::optional<std::string>& model) {
  ARACH_ASSIGN_OR_RETURN(ordered_json body, ParseOrderedJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  if (const auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return InvalidField("model", "must be a string");
    model = it->get<std::string>();
  }
  return body;
}

}  // namespace

absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(const std::string& body_text, size_t max_prompt_bytes) {
  TokenizeRequest request;
  ARACH_ASSIGN_OR_RETURN(ordered_json body, ReadBody(body_text, request.model));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> token_strings, OptionalBoolAt(body, "return_token_strs"));
  request.return_token_strs = token_strings.value_or(false);
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> special, OptionalBoolAt(body, "add_special_tokens"));
  if (body.contains("messages")) {
    ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "messages", "tools", "add_generation_prompt", "chat_template_kwargs",
                                           "documents", "add_special_tokens", "return_token_strs", "continue_final_message",
                                           "chat_template"}));
    if (special.value_or(false)) {
      return InvalidField("add_special_tokens", "is not supported with messages (the chat template writes the special tokens)");
    }
    // The conversation read as /v1/chat/completions reads it. That reader requires a model, which /tokenize
    // does not: a stand-in where none is given (the handler checks a given one against the served names).
    for (const char* key : {"add_special_tokens", "return_token_strs"}) body.erase(key);
    if (!request.model) body["model"] = "tokenize";
    ARACH_ASSIGN_OR_RETURN(request.chat, ChatRequestFromJson(body));
    return request;
  }
  ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "prompt", "add_special_tokens", "return_token_strs"}));
  const auto prompt = body.find("prompt");
  if (prompt == body.end() || !prompt->is_string()) return InvalidField("prompt", "is required (a string), or give messages");
  request.prompt = prompt->get<std::string>();
  if (request.prompt.size() > max_prompt_bytes) {
    return InvalidField("prompt", absl::StrCat(request.prompt.size(), " bytes exceed the limit of ", max_prompt_bytes));
  }
  request.add_special_tokens = special.value_or(true);
  return request;
}

absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(const std::string& body_text, int max_ids) {
  DetokenizeRequest request;
  ARACH_ASSIGN_OR_RETURN(const ordered_json body, ReadBody(body_text, request.model));
  ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "tokens"}));
  const auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) return InvalidField("tokens", "is required (a list of token ids)");
  if (tokens->size() > static_cast<size_t>(std::max(max_ids, 0))) {
    return InvalidField("tokens", absl::StrCat(tokens->size(), " ids exceed the limit of ", max_ids));
  }
  request.ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const ordered_json& id = (*tokens)[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return InvalidField(absl::StrCat("tokens[", i, "]"), "must be a token id (an integer >= 0)");
    }
    request.ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return request;
}

}  // namespace arach::server::http
