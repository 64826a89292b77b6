// OpenAI's content values (a chat message's content, a prediction's content): a string, or a list of content parts
// of which only text parts ({"type": "text", "text": ...}) are supported here.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

// `content` as the chat templates expect it: a string (text parts joined with "\n"), or null. Errors are
// INVALID_ARGUMENT naming `param` or the part at fault ("messages[2].content[1].type").
absl::StatusOr<nlohmann::ordered_json> NormalizeContent(const nlohmann::ordered_json& content, const std::string& param);

}  // namespace arach::server::http
