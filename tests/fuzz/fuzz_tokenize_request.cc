// libFuzzer: arbitrary bytes as the body of POST /tokenize and of POST /detokenize reach vLLM's tokenizer routes'
// readers (ParseTokenizeRequest, a prompt or a conversation read by the chat route's reader;
// ParseDetokenizeRequest): every outcome is a request within the limits or an INVALID_ARGUMENT naming a parameter;
// never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http/openai_error.h"
#include "server/http/tokenize_request.h"

namespace {

constexpr size_t kMaxPromptBytes = 4096;
constexpr int kMaxIds = 64;

void CheckRefusal(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) std::abort();
  if (arach::server::http::ErrorParam(status).empty()) std::abort();  // every refusal names a parameter
  (void)arach::server::http::JsonText(arach::server::http::ErrorBody(status));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const auto tokenize = arach::server::http::ParseTokenizeRequest(body, kMaxPromptBytes);
  if (!tokenize.ok()) {
    CheckRefusal(tokenize.status());
  } else if (tokenize->chat) {
    if (tokenize->chat->input.messages.empty() || !tokenize->prompt.empty()) std::abort();
  } else if (tokenize->prompt.size() > kMaxPromptBytes) {
    std::abort();
  }
  const auto detokenize = arach::server::http::ParseDetokenizeRequest(body, kMaxIds);
  if (!detokenize.ok()) {
    CheckRefusal(detokenize.status());
  } else {
    if (detokenize->ids.size() > static_cast<size_t>(kMaxIds)) std::abort();
    for (int32_t id : detokenize->ids) {
      if (id < 0) std::abort();
    }
  }
  return 0;
}
