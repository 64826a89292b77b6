// libFuzzer: arbitrary bytes as the body of POST /v1/completions reach the HTTP API's reader
// (ParseCompletionRequest): every outcome is a request or an INVALID_ARGUMENT naming a parameter, and the
// error renders as OpenAI's error body; never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http/completion_request.h"
#include "server/http/openai_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<arach::server::http::CompletionRequest> request = arach::server::http::ParseCompletionRequest(body);
  if (!request.ok()) {
    if (request.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (arach::server::http::ErrorParam(request.status()).empty()) std::abort();  // every refusal names a parameter
    (void)arach::server::http::JsonText(arach::server::http::ErrorBody(request.status()));
    return 0;
  }
  if (request->prompts.empty() || request->fields.n < 1) std::abort();
  return 0;
}
