#include "server/http/openai_error.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace arach::server::http {

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kUnimplemented: return 501;  // e.g. structured output in a build without it
    default: return 500;
  }
}

std::string ErrorParam(const absl::Status& status) {
  const absl::string_view message = status.message();
  const size_t colon = message.find(": ");
  if (colon == absl::string_view::npos || colon == 0) return "";
  const absl::string_view head = message.substr(0, colon);
  for (char c : head) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']')) return "";
  }
  return std::string(head);
}

nlohmann::json ErrorBody(const absl::Status& status) {
  const int http_status = HttpStatusOf(status);
  const char* type = http_status == 429 ? "rate_limit_error"
                     : http_status == 401 ? "authentication_error"
                     : http_status == 403 ? "permission_error"
                     : http_status == 404 ? "not_found_error"
                     : http_status < 500 ? "invalid_request_error"
                                         : "server_error";
  const std::string param = ErrorParam(status);
  nlohmann::json error = {{"message", std::string(status.message())},
                          {"type", type},
                          {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                          {"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}};
  if (status.code() == absl::StatusCode::kNotFound && param == "model") error["code"] = "model_not_found";
  if (status.code() == absl::StatusCode::kUnauthenticated) error["code"] = "invalid_api_key";
  return {{"error", std::move(error)}};
}

std::string JsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace arach::server::http
