// JSON text from clients (HTTP bodies, gRPC fields that carry JSON), parsed with the bound on nesting of
// engine/core/json_nesting.h: a document nested thousands of levels deep would exhaust the stack of the
// recursive copies and walks that follow, so it is refused before it is parsed.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/core/json_nesting.h"
#include "nlohmann/json.hpp"

namespace arach::server {

// `text` parsed (nesting checked first); INVALID_ARGUMENT "<field>: is not valid JSON (<where and why>)" otherwise.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, const std::string& field);
absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text, const std::string& field);

// The boolean at `key` of `object` (an object): nullopt where it is absent or null, INVALID_ARGUMENT
// "<field>: must be true or false" for any other value. `field` names the parameter in errors ("" names it `key`;
// give the path where the object is nested: "stream_options.include_usage").
absl::StatusOr<std::optional<bool>> OptionalBoolAt(const nlohmann::json& object, const std::string& key, absl::string_view field = "");
absl::StatusOr<std::optional<bool>> OptionalBoolAt(const nlohmann::ordered_json& object, const std::string& key,
                                                   absl::string_view field = "");

}  // namespace arach::server
