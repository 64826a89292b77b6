// The JSON object of a model folder's configuration file (config.json, generation_config.json,
// adapter_config.json, the Sentence-Transformers files): parsed without exceptions, and refused naming the file
// when it is no JSON or no object.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arach {

// `text` parsed; INVALID_ARGUMENT "<source>: not valid JSON" or "<source>: not a JSON object".
absl::StatusOr<nlohmann::json> ParseJsonObject(absl::string_view text, const std::string& source);

// The file at `path` read (its error names it) and parsed: any JSON value ("<path>: not valid JSON" otherwise), or
// an object (as ParseJsonObject).
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);
absl::StatusOr<nlohmann::json> ReadJsonObjectFile(const std::string& path);

}  // namespace arach
