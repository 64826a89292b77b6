#include "server/json_body.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace arach::server {

absl::Status KeyError(absl::string_view parent, const std::string& key, absl::string_view what) {
  bool plain = !key.empty() && key.size() <= 64;
  for (char c : key) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (plain) return absl::InvalidArgumentError(absl::StrCat(parent, parent.empty() ? "" : ".", key, ": ", what));
  return absl::InvalidArgumentError(absl::StrCat(parent.empty() ? "body" : parent, ": parameter ",
                                                 nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                                 " ", what));
}

namespace {

template <typename Json>
absl::StatusOr<Json> Parse(absl::string_view text, const std::string& field) {
  if (absl::Status status = CheckJsonNesting(text, field); !status.ok()) return status;
  Json parsed = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(field, ": is not valid JSON"));
  return parsed;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, const std::string& field) {
  return Parse<nlohmann::json>(text, field);
}

absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text, const std::string& field) {
  return Parse<nlohmann::ordered_json>(text, field);
}

}  // namespace arach::server
