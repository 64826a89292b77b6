#include "engine/tokenizer/unicode.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "absl/strings/str_cat.h"

namespace arach {

absl::StatusOr<std::vector<CodePoint>> DecodeUtf8(absl::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b0 = s[i];
    char32_t c;
    uint32_t len;
    if (b0 < 0x80) {
      c = b0;
      len = 1;
    } else if ((b0 & 0xe0) == 0xc0) {
      c = b0 & 0x1f;
      len = 2;
    } else if ((b0 & 0xf0) == 0xe0) {
      c = b0 & 0x0f;
      len = 3;
    } else if ((b0 & 0xf8) == 0xf0) {
      c = b0 & 0x07;
      len = 4;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", i));
    }
    if (i + len > n) return absl::InvalidArgumentError(absl::StrCat("truncated UTF-8 character at byte ", i));
    for (uint32_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", i + k));
      c = (c << 6) | (s[i + k] & 0x3f);
    }
    static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < kMinForLength[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 code point at byte ", i));
    }
    out.push_back(CodePoint{c, static_cast<uint32_t>(i), len});
    i += len;
  }
  return out;
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

std::string SanitizeUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    // Find the longest valid character at i (1..4 bytes).
    size_t length = 0;
    for (size_t len = 1; len <= 4 && i + len <= bytes.size(); ++len) {
      auto decoded = DecodeUtf8(bytes.substr(i, len));
      if (decoded.ok() && decoded->size() == 1) {
        length = len;
        break;
      }
    }
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    } else {
      out.append(bytes.data() + i, length);
      i += length;
    }
  }
  return out;
}

size_t CompleteUtf8Prefix(absl::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  // Look back at most 3 bytes for the start of the last character.
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const unsigned char b = s[n - back];
    if ((b & 0xc0) == 0x80) continue;  // continuation byte
    size_t need = 1;
    if ((b & 0xe0) == 0xc0) need = 2;
    else if ((b & 0xf0) == 0xe0) need = 3;
    else if ((b & 0xf8) == 0xf0) need = 4;
    return back >= need ? n : n - back;
  }
  return n;  // only continuation bytes: nothing to hold back that could ever complete
}

bool IsWhitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }

bool IsWordChar(char32_t c) {
  const UChar32 u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL)) return true;
  switch (u_charType(u)) {
    case U_NON_SPACING_MARK:
    case U_COMBINING_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_DECIMAL_DIGIT_NUMBER:
    case U_CONNECTOR_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

std::string ToLower(absl::string_view text) {
  // Character by character, as tokenizers does: no context (a final capital sigma becomes σ, not ς).
  std::string out;
  out.reserve(text.size());
  auto chars = DecodeUtf8(text);
  if (!chars.ok()) return std::string(text);
  for (const CodePoint& c : *chars) {
    if (c.value < 0x80) {
      out.push_back(static_cast<char>(c.value >= 'A' && c.value <= 'Z' ? c.value + ('a' - 'A') : c.value));
      continue;
    }
    icu::UnicodeString one(static_cast<UChar32>(c.value));
    one.toLower(icu::Locale::getRoot());
    one.toUTF8String(out);
  }
  return out;
}

std::string PythonLower(absl::string_view text) {
  std::string out;
  if (!DecodeUtf8(text).ok()) return std::string(text);
  icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())))
      .toLower(icu::Locale::getRoot())
      .toUTF8String(out);
  return out;
}

absl::string_view StripWhitespace(absl::string_view text, bool left, bool right) {
  auto chars = DecodeUtf8(text);
  if (!chars.ok() || chars->empty()) return text;
  size_t begin = 0, end = chars->size();
  if (left) {
    while (begin < end && IsWhitespace((*chars)[begin].value)) ++begin;
  }
  if (right) {
    while (end > begin && IsWhitespace((*chars)[end - 1].value)) --end;
  }
  if (begin == end) return text.substr(0, 0);
  const size_t from = (*chars)[begin].offset;
  const size_t to = (*chars)[end - 1].offset + (*chars)[end - 1].length;
  return text.substr(from, to - from);
}

absl::StatusOr<std::string> Normalize(NormalizationForm form, absl::string_view text) {
  if (form == NormalizationForm::kNone) return std::string(text);
  bool ascii = true;
  for (unsigned char ch : text) ascii &= ch < 0x80;
  if (ascii) return std::string(text);  // ASCII is invariant under every form
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  switch (form) {
    case NormalizationForm::kNfc: normalizer = icu::Normalizer2::getNFCInstance(status); break;
    case NormalizationForm::kNfkc: normalizer = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalizationForm::kNfd: normalizer = icu::Normalizer2::getNFDInstance(status); break;
    case NormalizationForm::kNfkd: normalizer = icu::Normalizer2::getNFKDInstance(status); break;
    case NormalizationForm::kNone: break;
  }
  if (U_FAILURE(status) || normalizer == nullptr) {
    return absl::InternalError(absl::StrCat("ICU normalizer unavailable: ", u_errorName(status)));
  }
  const icu::UnicodeString input = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const icu::UnicodeString output = normalizer->normalize(input, status);
  if (U_FAILURE(status)) return absl::InvalidArgumentError(absl::StrCat("normalization failed: ", u_errorName(status)));
  std::string result;
  output.toUTF8String(result);
  return result;
}

}  // namespace arach
