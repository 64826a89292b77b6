// libFuzzer: arbitrary bytes as the body of POST /v1/responses reach the HTTP API's reader (ParseResponsesRequest:
// input items, instructions, flat tools, tool_choice, text.format, previous_response_id (a stored conversation
// under "resp_1", with a function call the input may answer) and the parameter check): every outcome is a request or
// an INVALID_ARGUMENT naming a parameter; never a crash or an exception. The same bytes as the query of GET
// /v1/responses/{id} reach ParseResponseRetrieval, and as the body of POST /v1/responses/input_tokens
// ParseResponseInputTokensRequest, under the same rule.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <httplib.h>

#include "server/http/openai_error.h"
#include "server/http/response_retrieval.h"
#include "server/http/responses_request.h"

namespace {

void RetrieveWithQuery(const std::string& text) {
  httplib::Params query;
  httplib::detail::parse_query_text(text, query);
  const absl::StatusOr<arach::server::http::ResponseRetrieval> retrieval = arach::server::http::ParseResponseRetrieval(query);
  if (retrieval.ok()) {
    if (!retrieval->stream && retrieval->first_event != 0) std::abort();  // starting_after only with stream
    return;
  }
  if (retrieval.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
  if (arach::server::http::ErrorParam(retrieval.status()).empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  RetrieveWithQuery(body);
  const auto stored = [](const std::string& id) -> absl::StatusOr<nlohmann::ordered_json> {
    if (id != "resp_1") return absl::NotFoundError(id);
    return nlohmann::ordered_json::parse(R"([{"type": "message", "role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{}"}])");
  };
  // input_tokens reads the same bodies (fewer parameters), under the same rule.
  const absl::StatusOr<arach::server::http::ResponsesRequest> counted =
      arach::server::http::ParseResponseInputTokensRequest(body, stored);
  if (!counted.ok() && (counted.status().code() != absl::StatusCode::kInvalidArgument ||
                        arach::server::http::ErrorParam(counted.status()).empty())) {
    std::abort();
  }
  const absl::StatusOr<arach::server::http::ResponsesRequest> request = arach::server::http::ParseResponsesRequest(body, stored);
  if (!request.ok()) {
    if (request.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (arach::server::http::ErrorParam(request.status()).empty()) std::abort();  // every refusal names a parameter
    (void)arach::server::http::JsonText(arach::server::http::ErrorBody(request.status()));
    return 0;
  }
  if (request->chat.input.messages.empty() || request->chat.fields.n != 1) std::abort();
  const bool named = request->chat.tool_choice.mode == arach::server::ToolChoice::Mode::kNamed;
  if (named && request->chat.tools.empty()) std::abort();  // a named function is one of the tools
  return 0;
}
