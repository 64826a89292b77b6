// The GPT-2 pre-tokenizer (also GPT-NeoX's), equivalent to the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// evaluated leftmost-first as Oniguruma does, written as a scanner over classified code points.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

// Splits valid UTF-8 `text` into pieces (views into `text`) that concatenate back to it.
absl::StatusOr<std::vector<absl::string_view>> SplitGpt2(absl::string_view text);

}  // namespace arach
