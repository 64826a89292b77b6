#include "server/http/content_parts.h"

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server::http {

using ordered_json = nlohmann::ordered_json;

absl::StatusOr<ordered_json> NormalizeContent(const ordered_json& content, const std::string& param) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) return InvalidField(param, "must be a string, null, or a list of content parts");
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const ordered_json& part = content[j];
    const std::string part_param = absl::StrCat(param, "[", j, "]");
    if (!part.is_object()) return InvalidField(part_param, "must be a content part object");
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return InvalidField(absl::StrCat(part_param, ".type"), "is required");
    if (*type != "text") {
      return InvalidField(absl::StrCat(part_param, ".type"), absl::StrCat("'", type->get<std::string>(), "' is not supported (text only)"));
    }
    const auto part_text = part.find("text");
    if (part_text == part.end() || !part_text->is_string()) return InvalidField(absl::StrCat(part_param, ".text"), "must be a string");
    if (j > 0) text += "\n";
    text += part_text->get<std::string>();
  }
  return ordered_json(text);
}

}  // namespace arach::server::http
