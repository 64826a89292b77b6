#include "engine/core/field_error.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arach {

std::string EngineFieldName(absl::string_view field) { return std::string(field); }

absl::Status InvalidField(FieldNames names, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(names(field), ": ", what));
}

absl::Status InvalidField(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::Status InvalidFieldAt(FieldNames names, absl::string_view field, size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(names(field), "[", index, "]: ", what));
}

absl::Status CheckTokenIds(std::span<const int32_t> ids, int vocab_size, absl::string_view field, FieldNames names) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return InvalidFieldAt(names, field, i, absl::StrCat("token id ", ids[i], " is outside the vocabulary [0, ", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

std::string ClipForError(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return absl::StrCat(text.substr(0, cut), "...");
}

absl::Status KeyError(absl::string_view parent, const std::string& key, absl::string_view what, absl::string_view top) {
  bool plain = !key.empty() && key.size() <= 64;
  for (char c : key) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (plain) return absl::InvalidArgumentError(absl::StrCat(parent, parent.empty() ? "" : ".", key, ": ", what));
  return absl::InvalidArgumentError(absl::StrCat(parent.empty() ? top : parent, ": parameter ",
                                                 nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                                 " ", what));
}

}  // namespace arach
