#include "engine/tokenizer/byte_level.h"

#include "engine/tokenizer/unicode.h"

namespace arach {

ByteLevelAlphabet::ByteLevelAlphabet() {
  decode_.fill(-1);
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff); };
  char32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = printable(b) ? static_cast<char32_t>(b) : next_extra++;
    AppendUtf8(c, symbols_[b]);
    decode_[c] = static_cast<int16_t>(b);
  }
}

std::string ByteLevelAlphabet::Encode(absl::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += symbols_[b];
  return out;
}

}  // namespace arach
