#include "engine/model/json_object.h"

#include "engine/core/field_error.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"

namespace arach {

namespace {

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, const std::string& source) {
  nlohmann::json root = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidField(source, "not valid JSON");
  return root;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJsonObject(absl::string_view text, const std::string& source) {
  ARACH_ASSIGN_OR_RETURN(nlohmann::json root, ParseJson(text, source));
  if (!root.is_object()) return InvalidField(source, "not a JSON object");
  return root;
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return ParseJson(text, path);
}

absl::StatusOr<nlohmann::json> ReadJsonObjectFile(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return ParseJsonObject(text, path);
}

}  // namespace arach
