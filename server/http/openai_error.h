// The one place where errors (absl::Status) become HTTP answers in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": "invalid_argument"}}
// INVALID_ARGUMENT and FAILED_PRECONDITION -> 400, NOT_FOUND -> 404, RESOURCE_EXHAUSTED -> 429 (with
// Retry-After), UNAVAILABLE -> 503, DEADLINE_EXCEEDED -> 504, anything else -> 500. `param` is the field
// the message starts with ("temperature: -1 must be >= 0" names "temperature").
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

int HttpStatusOf(const absl::Status& status);

// The error object of `status` (not OK).
nlohmann::json ErrorBody(const absl::Status& status);

// The field an error message names: its text before the first ": " when that is a parameter path
// ("prompt[1][3]", "stream_options.include_usage"); "" otherwise.
std::string ErrorParam(const absl::Status& status);

// JSON text for an HTTP body: invalid UTF-8 (a token that ends inside a character) becomes U+FFFD.
std::string JsonText(const nlohmann::json& value);

}  // namespace arach::server::http
