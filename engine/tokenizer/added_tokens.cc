#include "engine/tokenizer/added_tokens.h"

#include "engine/tokenizer/unicode.h"

namespace arach {
namespace {

// The code point that ends at byte `end` of `text` (valid UTF-8), and where it starts.
char32_t CharBefore(absl::string_view text, size_t end, size_t* start) {
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xc0) == 0x80) --begin;
  *start = begin;
  auto decoded = DecodeUtf8(text.substr(begin, end - begin));
  return decoded.ok() && !decoded->empty() ? (*decoded)[0].value : 0;
}

// The code point that starts at byte `begin`, and where it ends.
char32_t CharAt(absl::string_view text, size_t begin, size_t* end) {
  size_t stop = begin + 1;
  while (stop < text.size() && (static_cast<unsigned char>(text[stop]) & 0xc0) == 0x80) ++stop;
  *end = stop;
  auto decoded = DecodeUtf8(text.substr(begin, stop - begin));
  return decoded.ok() && !decoded->empty() ? (*decoded)[0].value : 0;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)) {
  for (int i = 0; i < static_cast<int>(patterns_.size()); ++i) {
    if (!patterns_[i].empty()) by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
  }
}

std::vector<TextSegment> AddedTokenMatcher::Split(absl::string_view text) const {
  std::vector<TextSegment> segments;
  size_t plain_start = 0;  // where the text not yet assigned to a segment begins
  size_t i = 0;
  while (i < text.size()) {
    int best = -1;
    size_t best_len = 0;
    for (int t : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const std::string& pattern = patterns_[t];
      if (pattern.size() > best_len && text.substr(i, pattern.size()) == pattern) {
        best = t;
        best_len = pattern.size();
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& token = tokens_[best];
    size_t start = i, stop = i + best_len;
    if (token.single_word) {
      size_t unused;
      const bool word_before = start > 0 && IsWordChar(CharBefore(text, start, &unused));
      const bool word_after = stop < text.size() && IsWordChar(CharAt(text, stop, &unused));
      if (word_before || word_after) {  // part of a word: not this token (the search goes on after it)
        i = stop;
        continue;
      }
    }
    if (token.lstrip) {
      while (start > plain_start) {
        size_t previous;
        if (!IsWhitespace(CharBefore(text, start, &previous))) break;
        start = previous;
      }
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t after;
        if (!IsWhitespace(CharAt(text, stop, &after))) break;
        stop = after;
      }
    }
    if (start > plain_start) segments.push_back({std::string(text.substr(plain_start, start - plain_start)), -1, plain_start});
    segments.push_back({std::string(text.substr(start, stop - start)), token.id, start});
    i = stop;
    plain_start = stop;
  }
  if (plain_start < text.size()) segments.push_back({std::string(text.substr(plain_start)), -1, plain_start});
  return segments;
}

}  // namespace arach
