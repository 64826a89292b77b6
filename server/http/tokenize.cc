#include "server/http/tokenize.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"
#include "server/admission.h"
#include "server/chat_prompt.h"
#include "server/http/chat_request.h"
#include "server/http/http_call.h"
#include "server/http/model_ids.h"
#include "server/json_body.h"
#include "server/metrics.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

absl::Status Bad(const std::string& param, absl::string_view what) { return absl::InvalidArgumentError(absl::StrCat(param, ": ", what)); }

// OK, or the first key of `body` that is not one of `known`.
absl::Status CheckKeys(const ordered_json& body, std::initializer_list<absl::string_view> known) {
  for (const auto& item : body.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) return KeyError("", item.key(), "is not a known parameter");
  }
  return absl::OkStatus();
}

absl::Status CheckModel(const ServiceContext& context, const Engine& engine, const ordered_json& body) {
  const auto model = body.find("model");
  if (model == body.end() || model->is_null()) return absl::OkStatus();
  if (!model->is_string()) return Bad("model", "must be a string");
  return VariantOfModelId(model->get<std::string>(), context.served_model_name, engine.has_adapter()).status();
}

std::optional<bool> BoolAt(const ordered_json& body, const char* key, absl::Status* error) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) {
    *error = Bad(key, "must be true or false");
    return std::nullopt;
  }
  return it->get<bool>();
}

// The token ids of a /tokenize body.
absl::StatusOr<std::vector<int32_t>> Tokenize(const ServiceContext& context, const Engine& engine, const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const ordered_json body, ParseOrderedJson(body_text, "body"));
  if (!body.is_object()) return Bad("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckModel(context, engine, body));
  absl::Status error;
  if (BoolAt(body, "return_token_strs", &error).value_or(false)) return Bad("return_token_strs", "is not supported");
  ARACH_RETURN_IF_ERROR(error);
  if (body.contains("messages")) {
    ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "messages", "tools", "add_generation_prompt", "chat_template_kwargs",
                                           "add_special_tokens", "return_token_strs", "continue_final_message"}));
    if (BoolAt(body, "add_special_tokens", &error).value_or(false)) {
      return Bad("add_special_tokens", "is not supported with messages (the chat template writes the special tokens)");
    }
    ARACH_RETURN_IF_ERROR(error);
    // The conversation read as /v1/chat/completions reads it, and rendered the same way.
    ordered_json chat = body;
    chat["model"] = context.served_model_name;
    for (const char* key : {"add_special_tokens", "return_token_strs"}) chat.erase(key);
    ARACH_ASSIGN_OR_RETURN(const ChatRequest request, ParseChatRequest(chat.dump()));
    ARACH_ASSIGN_OR_RETURN(const ChatPrompt prompt, RenderChatPrompt(engine, context.limits, request.input, "messages"));
    return prompt.ids;
  }
  ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "prompt", "add_special_tokens", "return_token_strs"}));
  const auto prompt = body.find("prompt");
  if (prompt == body.end() || !prompt->is_string()) return Bad("prompt", "is required (a string), or give messages");
  const std::string& text = prompt->get_ref<const std::string&>();
  if (text.size() > context.limits.max_tokenize_bytes) {
    return Bad("prompt", absl::StrCat(text.size(), " bytes exceed the limit of ", context.limits.max_tokenize_bytes));
  }
  const bool special = BoolAt(body, "add_special_tokens", &error).value_or(true);
  ARACH_RETURN_IF_ERROR(error);
  absl::StatusOr<std::vector<int32_t>> ids = engine.tokenizer().Encode(text, special);
  if (!ids.ok()) return Bad("prompt", ids.status().message());
  return ids;
}

// The text of a /detokenize body.
absl::StatusOr<std::string> Detokenize(const ServiceContext& context, const Engine& engine, const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const ordered_json body, ParseOrderedJson(body_text, "body"));
  if (!body.is_object()) return Bad("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckKeys(body, {"model", "tokens"}));
  ARACH_RETURN_IF_ERROR(CheckModel(context, engine, body));
  const auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) return Bad("tokens", "is required (a list of token ids)");
  if (tokens->size() > static_cast<size_t>(context.limits.max_detokenize_ids)) {
    return Bad("tokens", absl::StrCat(tokens->size(), " ids exceed the limit of ", context.limits.max_detokenize_ids));
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const ordered_json& id = (*tokens)[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return Bad(absl::StrCat("tokens[", i, "]"), "must be a token id (an integer >= 0)");
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  ARACH_RETURN_IF_ERROR(CheckTokenIds(ids, engine.model_config().vocab_size, "tokens"));
  ARACH_ASSIGN_OR_RETURN(std::string text, engine.tokenizer().Decode(ids, /*skip_special_tokens=*/false));
  return SanitizeUtf8(text);
}

// Admits the call, answers `work`'s JSON or its error, records the call's time under `rpc`.
template <typename Work>
void ServeTokenizerCall(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const char* rpc,
                        Work work) {
  const auto start = std::chrono::steady_clock::now();
  response.set_header(kRequestIdHeader, RequestIdOf(request));
  absl::StatusOr<CallTicket> ticket = AdmitCall(context, request.get_header_value("Authorization"));  // counts its own refusals
  if (!ticket.ok()) return SendError(response, ticket.status());
  absl::StatusOr<json> answer = work(ticket->engine());
  if (!answer.ok()) {
    RecordRejection(context, answer.status(), ticket->caller().key);
    return SendError(response, answer.status());
  }
  SendJson(response, 200, *answer);
  context.metrics->RecordTokenizerCall(rpc, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

void HandleTokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeTokenizerCall(context, request, response, "Tokenize", [&](const Engine& engine) -> absl::StatusOr<json> {
    ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, Tokenize(context, engine, request.body));
    return json{{"count", ids.size()}, {"max_model_len", engine.model_config().max_positions}, {"tokens", std::move(ids)}};
  });
}

void HandleDetokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeTokenizerCall(context, request, response, "Detokenize", [&](const Engine& engine) -> absl::StatusOr<json> {
    ARACH_ASSIGN_OR_RETURN(std::string text, Detokenize(context, engine, request.body));
    return json{{"prompt", std::move(text)}};
  });
}

}  // namespace arach::server::http
