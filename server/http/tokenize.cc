#include "server/http/tokenize.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"
#include "server/admission.h"
#include "server/chat_prompt.h"
#include "server/http/chat_turn_call.h"
#include "server/http/http_call.h"
#include "server/http/model_ids.h"
#include "server/http/responses.h"
#include "server/http/tokenize_request.h"
#include "server/metrics.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

absl::Status CheckModel(const ServiceContext& context, const Engine& engine, const std::optional<std::string>& model) {
  if (!model) return absl::OkStatus();
  return VariantOfModelId(*model, ServedModelsOf(context.served_model_name, engine)).status();
}

// The token ids of a /tokenize request.
absl::StatusOr<std::vector<int32_t>> Tokenize(const ServiceContext& context, const Engine& engine, const TokenizeRequest& request) {
  if (request.chat) {  // rendered as /v1/chat/completions renders it
    std::shared_ptr<const ChatTemplate> own;
    if (request.chat->chat_template) {
      ARACH_ASSIGN_OR_RETURN(own, ParseRequestChatTemplate(*request.chat->chat_template, context.trust_request_chat_template, engine,
                                                           "chat_template"));
    }
    ARACH_ASSIGN_OR_RETURN(const ChatPrompt prompt, RenderChatPrompt(engine, context.limits, request.chat->input, "messages", own.get()));
    return prompt.ids;
  }
  absl::StatusOr<std::vector<int32_t>> ids = engine.tokenizer().Encode(request.prompt, request.add_special_tokens);
  if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat("prompt: ", ids.status().message()));
  return ids;
}

// The answer to a /tokenize body: {"count", "max_model_len", "tokens"}, and "token_strs" when asked.
absl::StatusOr<json> TokenizeAnswer(const ServiceContext& context, const Engine& engine, const std::string& body) {
  ARACH_ASSIGN_OR_RETURN(const TokenizeRequest request, ParseTokenizeRequest(body, context.limits.max_tokenize_bytes));
  ARACH_RETURN_IF_ERROR(CheckModel(context, engine, request.model));
  ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, Tokenize(context, engine, request));
  json answer = {{"count", ids.size()}, {"max_model_len", engine.model_config().max_positions}};
  if (request.return_token_strs) {
    json strings = json::array();
    for (int32_t id : ids) {
      const std::optional<std::string> token = engine.tokenizer().IdToToken(id);
      if (!token) return absl::InternalError(absl::StrCat("the tokenizer gave id ", id, ", which its vocabulary lacks"));
      strings.push_back(SanitizeUtf8(*token));
    }
    answer["token_strs"] = std::move(strings);
  }
  answer["tokens"] = std::move(ids);
  return answer;
}

// The text of a /detokenize body.
absl::StatusOr<std::string> Detokenize(const ServiceContext& context, const Engine& engine, const std::string& body) {
  ARACH_ASSIGN_OR_RETURN(const DetokenizeRequest request, ParseDetokenizeRequest(body, context.limits.max_detokenize_ids));
  ARACH_RETURN_IF_ERROR(CheckModel(context, engine, request.model));
  ARACH_RETURN_IF_ERROR(CheckTokenIds(request.ids, engine.model_config().vocab_size, "tokens"));
  ARACH_ASSIGN_OR_RETURN(std::string text, engine.tokenizer().Decode(request.ids, /*skip_special_tokens=*/false));
  return SanitizeUtf8(text);
}

// Admits the call, answers `work(ticket)`'s JSON or its error, records the call's time under `rpc`.
template <typename Work>
void ServeTokenizerCall(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const char* rpc,
                        Work work) {
  const auto start = std::chrono::steady_clock::now();
  response.set_header(kRequestIdHeader, RequestIdOf(request));
  absl::StatusOr<CallTicket> ticket = AdmitCall(context, request.get_header_value("Authorization"));  // counts its own refusals
  if (!ticket.ok()) return SendError(response, ticket.status());
  absl::StatusOr<json> answer = work(*ticket);
  if (!answer.ok()) {
    RecordRejection(context, answer.status(), ticket->caller().key);
    return SendError(response, answer.status());
  }
  SendJson(response, 200, *answer);
  context.metrics->RecordTokenizerCall(rpc, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

void HandleTokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeTokenizerCall(context, request, response, "Tokenize", [&](const CallTicket& ticket) -> absl::StatusOr<json> {
    return TokenizeAnswer(context, ticket.engine(), request.body);
  });
}

void HandleDetokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeTokenizerCall(context, request, response, "Detokenize", [&](const CallTicket& ticket) -> absl::StatusOr<json> {
    ARACH_ASSIGN_OR_RETURN(std::string text, Detokenize(context, ticket.engine(), request.body));
    return json{{"prompt", std::move(text)}};
  });
}

void HandleResponseInputTokens(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeTokenizerCall(context, request, response, "ResponseInputTokens", [&](const CallTicket& ticket) -> absl::StatusOr<json> {
    const Engine& engine = ticket.engine();
    ARACH_ASSIGN_OR_RETURN(ResponsesRequest parsed, ParseResponseInputTokensRequest(
                                                        request.body, StoredConversationOf(context.responses, ticket.caller().key)));
    ARACH_RETURN_IF_ERROR(CheckModel(context, engine, parsed.chat.fields.model));
    ARACH_ASSIGN_OR_RETURN(const ChatPrompt prompt, RenderChatTurnPrompt(context, engine, parsed.chat, "input"));
    return json{{"object", "response.input_tokens"}, {"input_tokens", prompt.ids.size()}};
  });
}

}  // namespace arach::server::http
