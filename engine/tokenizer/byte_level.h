// GPT-2's byte-level alphabet: each byte 0..255 is written as one printable Unicode character, so that
// BPE vocabularies are strings. Printable Latin-1 bytes map to themselves; the rest to U+0100 onwards.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace arach {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();
  // UTF-8 of the character that stands for `byte`.
  const std::string& Symbol(uint8_t byte) const { return symbols_[byte]; }
  // The byte a character stands for, or -1 when it is not part of the alphabet.
  int ByteOf(char32_t c) const { return c < decode_.size() ? decode_[c] : -1; }
  // Maps raw bytes to their symbols.
  std::string Encode(absl::string_view bytes) const;

 private:
  std::array<std::string, 256> symbols_;
  std::array<int16_t, 324> decode_;  // code point -> byte (all symbols are below U+0144)
};

}  // namespace arach
