#include "server/json_body.h"


#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server {

namespace {

template <typename Json>
absl::StatusOr<std::optional<bool>> BoolAt(const Json& object, const std::string& key, absl::string_view field) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return absl::InvalidArgumentError(absl::StrCat(field.empty() ? key : field, ": must be true or false"));
  return it->template get<bool>();
}

}  // namespace

absl::StatusOr<std::optional<bool>> OptionalBoolAt(const nlohmann::json& object, const std::string& key, absl::string_view field) {
  return BoolAt(object, key, field);
}

absl::StatusOr<std::optional<bool>> OptionalBoolAt(const nlohmann::ordered_json& object, const std::string& key,
                                                   absl::string_view field) {
  return BoolAt(object, key, field);
}

namespace {

// nlohmann's parse error without its "[json.exception.parse_error.101] " prefix, e.g. "parse error at line 1,
// column 9: syntax error while parsing value - unexpected ','; expected ...", clipped (its "last read" may quote a
// long token of the client's text).
std::string ParseErrorReason(const nlohmann::json::exception& e) {
  absl::string_view what = e.what();
  if (const size_t end = what.find("] "); absl::StartsWith(what, "[json.exception.") && end != what.npos) {
    what.remove_prefix(end + 2);
  }
  return ClipForError(what, 300);
}

template <typename Json>
absl::StatusOr<Json> Parse(absl::string_view text, const std::string& field) {
  if (absl::Status status = CheckJsonNesting(text, field); !status.ok()) return status;
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number beyond a double
    return absl::InvalidArgumentError(absl::StrCat(field, ": is not valid JSON (", ParseErrorReason(e), ")"));
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, const std::string& field) {
  return Parse<nlohmann::json>(text, field);
}

absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text, const std::string& field) {
  return Parse<nlohmann::ordered_json>(text, field);
}

}  // namespace arach::server
