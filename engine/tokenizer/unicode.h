// UTF-8 and Unicode character classes (ICU underneath) used by the tokenizers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

// One decoded code point and where its bytes are.
struct CodePoint {
  char32_t value;
  uint32_t offset;  // byte offset in the source
  uint32_t length;  // 1..4
};

// Decodes UTF-8; malformed input (bad sequences, overlongs, surrogates) is INVALID_ARGUMENT with the byte offset.
absl::StatusOr<std::vector<CodePoint>> DecodeUtf8(absl::string_view text);
void AppendUtf8(char32_t value, std::string& out);
// `bytes` with every malformed UTF-8 sequence replaced by U+FFFD (valid text is returned unchanged).
std::string SanitizeUtf8(absl::string_view bytes);
// Length of the longest prefix of `bytes` that ends on a complete UTF-8 character (for streaming).
size_t CompleteUtf8Prefix(absl::string_view bytes);

// Unicode White_Space (Rust's char::is_whitespace, regex \s).
bool IsWhitespace(char32_t c);
// A word character as Unicode regexes define \w: alphabetic, marks, decimal digits, connector
// punctuation, join controls.
bool IsWordChar(char32_t c);
// Full Unicode lowercasing of each character on its own, without a locale (as tokenizers' Lowercase).
std::string ToLower(absl::string_view text);
// Python's str.lower(): full Unicode lowercasing of the whole string, in context and without a locale (a capital
// sigma ending a word becomes ς). Not valid UTF-8: returned unchanged.
std::string PythonLower(absl::string_view text);
// `text` without its leading (left) and/or trailing (right) White_Space characters.
absl::string_view StripWhitespace(absl::string_view text, bool left, bool right);

enum class NormalizationForm { kNone, kNfc, kNfkc, kNfd, kNfkd };
// Applies a Unicode normalisation form to valid UTF-8 text.
absl::StatusOr<std::string> Normalize(NormalizationForm form, absl::string_view text);

}  // namespace arach
