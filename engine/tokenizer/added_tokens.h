// Added tokens (special ones like "<|endoftext|>" and extra ones like GPT-NeoX's runs of spaces) are cut
// out of the text before anything else, leftmost-longest, as Hugging Face `tokenizers` does: first the
// tokens marked `normalized: false` on the raw text, then the `normalized: true` ones on each normalized
// piece. They never reach the model. `single_word` matches only between non-word characters; `lstrip` /
// `rstrip` take the whitespace on that side with them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace arach {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool normalized = false;  // matched after normalization (true) or on the raw text (false)
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
};

// A piece of text: either plain text (id < 0) or one added token.
struct TextSegment {
  std::string text;
  int32_t id = -1;
  size_t offset = 0;  // byte offset in the text that was split
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is what token i matches (its content, or its normalized content).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);

  // Cuts the added tokens out of `text`. Plain runs keep their text; empty runs are dropped.
  std::vector<TextSegment> Split(absl::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  // tokens_ indices by the first byte of their pattern.
  std::vector<std::vector<int>> by_first_byte_ = std::vector<std::vector<int>>(256);
};

}  // namespace arach
