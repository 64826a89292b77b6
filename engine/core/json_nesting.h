// A bound on how deeply JSON text from outside nests: parsers and the walks, copies and dumps that follow a
// parse recurse once per level (xgrammar's JSON parser among them), so a document nested thousands of levels
// deep would exhaust the stack. Text over the bound is refused before any parser sees it.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace arach {

inline constexpr int kMaxJsonNesting = 64;

// INVALID_ARGUMENT "<field>: nests lists and objects deeper than kMaxJsonNesting levels" when `text` does
// (brackets inside JSON strings do not count); OK otherwise, whether or not `text` is valid JSON.
absl::Status CheckJsonNesting(absl::string_view text, absl::string_view field);

}  // namespace arach
