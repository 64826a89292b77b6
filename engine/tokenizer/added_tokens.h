// Added tokens (special ones like "<|endoftext|>" and extra ones like GPT-NeoX's runs of spaces) are cut
// out of the text before pre-tokenization, leftmost-longest, as Hugging Face `tokenizers` does: first the
// tokens marked `normalized: false` on the raw text, then the `normalized: true` ones on the normalized text.
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
};

// A piece of text: either plain text (id < 0) or one added token.
struct TextSegment {
  std::string text;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // Cuts the added tokens out of `text`, leftmost-longest. Plain runs keep their text.
  std::vector<TextSegment> Split(absl::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;
  // tokens_ indices by the first byte of their content.
  std::vector<std::vector<int>> by_first_byte_ = std::vector<std::vector<int>>(256);
};

}  // namespace arach
