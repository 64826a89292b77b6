#include "engine/tokenizer/added_tokens.h"

namespace arach {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (int i = 0; i < static_cast<int>(tokens_.size()); ++i) {
    if (!tokens_[i].content.empty()) by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
}

std::vector<TextSegment> AddedTokenMatcher::Split(absl::string_view text) const {
  std::vector<TextSegment> segments;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    int best = -1;
    size_t best_len = 0;
    for (int t : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const std::string& content = tokens_[t].content;
      if (content.size() > best_len && text.substr(i, content.size()) == content) {
        best = t;
        best_len = content.size();
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    if (i > plain_start) segments.push_back({std::string(text.substr(plain_start, i - plain_start)), -1});
    segments.push_back({tokens_[best].content, tokens_[best].id});
    i += best_len;
    plain_start = i;
  }
  if (plain_start < text.size()) segments.push_back({std::string(text.substr(plain_start)), -1});
  return segments;
}

}  // namespace arach
