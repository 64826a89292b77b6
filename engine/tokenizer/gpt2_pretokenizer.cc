#include "engine/tokenizer/gpt2_pretokenizer.h"

#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {
namespace {

// Length of the contraction ('s 't 're 've 'm 'll 'd) starting at cps[i], or 0.
size_t ContractionLength(const std::vector<CodePoint>& cps, size_t i) {
  if (cps[i].value != '\'' || i + 1 >= cps.size()) return 0;
  const char32_t a = cps[i + 1].value;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < cps.size()) {
    const char32_t b = cps[i + 2].value;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::vector<absl::string_view>> SplitGpt2(absl::string_view text) {
  ARACH_ASSIGN_OR_RETURN(std::vector<CodePoint> cps, DecodeUtf8(text));
  const size_t n = cps.size();
  std::vector<CharClass> cls(n);
  for (size_t i = 0; i < n; ++i) cls[i] = ClassifyChar(cps[i].value);

  std::vector<absl::string_view> pieces;
  auto emit = [&](size_t begin, size_t end) {  // code point range [begin, end)
    const size_t from = cps[begin].offset;
    const size_t to = end < n ? cps[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
  };

  size_t i = 0;
  while (i < n) {
    // 's 't 're 've 'm 'll 'd
    if (const size_t len = ContractionLength(cps, i); len > 0) {
      emit(i, i + len);
      i += len;
      continue;
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020 then a run of one class.
    const size_t run_start = (cps[i].value == ' ' && i + 1 < n && cls[i + 1] != CharClass::kWhitespace) ? i + 1 : i;
    if (cls[run_start] != CharClass::kWhitespace) {
      const CharClass run_class = cls[run_start];
      size_t end = run_start + 1;
      while (end < n && cls[end] == run_class) ++end;
      emit(i, end);
      i = end;
      continue;
    }
    // `\s+(?!\S)` then `\s+`: a whitespace run leaves its last character to the word that follows.
    size_t end = i + 1;
    while (end < n && cls[end] == CharClass::kWhitespace) ++end;
    if (end < n && end - i >= 2) --end;
    emit(i, end);
    i = end;
  }
  return pieces;
}

}  // namespace arach
