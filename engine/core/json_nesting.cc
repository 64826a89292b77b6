#include "engine/core/json_nesting.h"

#include "absl/strings/str_cat.h"

namespace arach {

absl::Status CheckJsonNesting(absl::string_view text, absl::string_view field) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": nests lists and objects deeper than ", kMaxJsonNesting, " levels"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

}  // namespace arach
