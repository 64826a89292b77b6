// OpenAI's predicted outputs: `prediction: {"type": "content", "content": <string or text parts>}`, the output as
// the caller expects it to be, mostly (a file being edited). The server drafts from it (speculative decoding,
// EngineRequest::prediction); the answer is the same with or without it.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

// The predicted text of `body`'s `prediction` (nullopt where absent, null or empty). Errors are INVALID_ARGUMENT
// naming the parameter ("prediction.type", "prediction.content[1].text").
absl::StatusOr<std::optional<std::string>> ReadPrediction(const nlohmann::json& body);

}  // namespace arach::server::http
