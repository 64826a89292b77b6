#include "engine/chat/jinja_text.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>

#include "engine/tokenizer/unicode.h"

namespace arach::jinja {
namespace {

bool PythonSpace(char32_t c) { return IsWhitespace(c) || (c >= 0x1c && c <= 0x1f); }

}  // namespace


std::u32string CodePoints(const std::string& text) {
  const std::string valid = SanitizeUtf8(text);
  absl::StatusOr<std::vector<CodePoint>> decoded = DecodeUtf8(valid);
  std::u32string out;
  if (decoded.ok()) {
    for (const CodePoint& cp : *decoded) out += cp.value;
  }
  return out;
}

std::string Utf8(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) AppendUtf8(c, out);
  return out;
}

std::string Upper(const std::string& text) {
  std::string out;
  icu::UnicodeString::fromUTF8(text).toUpper(icu::Locale::getRoot()).toUTF8String(out);
  return out;
}

std::string Lower(const std::string& text) { return PythonLower(text); }

// Python's str.capitalize(): the first character in title case, the rest lower case.
std::string Capitalize(const std::string& text) {
  const std::u32string cps = CodePoints(text);
  if (cps.empty()) return "";
  const char32_t first = static_cast<char32_t>(u_totitle(static_cast<UChar32>(cps[0])));
  return Utf8(std::u32string(1, first)) + Lower(Utf8(cps.substr(1)));
}

// Python's str.title(): a cased character after an uncased one starts a word.
std::string PythonTitle(const std::string& text) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : CodePoints(text)) {
    const bool cased = u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CASED);
    out += static_cast<char32_t>(previous_cased ? u_tolower(static_cast<UChar32>(c)) : u_totitle(static_cast<UChar32>(c)));
    previous_cased = cased;
  }
  return Utf8(out);
}

// Jinja2's title filter: words start after "-", whitespace, "(", "{", "[" or "<".
std::string JinjaTitle(const std::string& text) {
  std::u32string out;
  bool at_word_start = true;
  for (char32_t c : CodePoints(text)) {
    const bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsWhitespace(c);
    if (separator) {
      out += c;
      at_word_start = true;
    } else {
      out += static_cast<char32_t>(at_word_start ? u_toupper(static_cast<UChar32>(c)) : u_tolower(static_cast<UChar32>(c)));
      at_word_start = false;
    }
  }
  return Utf8(out);
}


// str.strip / lstrip / rstrip: whitespace, or the characters of `chars`.
std::string Strip(const std::string& text, const Value* chars, bool left, bool right) {
  const std::u32string cps = CodePoints(text);
  const std::u32string set = chars != nullptr && chars->is_string() ? CodePoints(chars->as_string()) : std::u32string();
  const bool whitespace = chars == nullptr || chars->is_none() || chars->is_undefined();
  auto strip = [&](char32_t c) { return whitespace ? PythonSpace(c) : set.find(c) != std::u32string::npos; };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strip(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip(cps[end - 1])) --end;
  }
  return Utf8(cps.substr(begin, end - begin));
}

// str.split(sep=None, maxsplit=-1): from the left; the last part keeps what follows it as it is.
std::vector<Value> Split(const std::string& text, const Value* sep, int64_t maxsplit) {
  std::vector<Value> parts;
  if (sep == nullptr || sep->is_none()) {
    const std::u32string cps = CodePoints(text);
    size_t i = 0;
    while (true) {
      while (i < cps.size() && PythonSpace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(Value::String(Utf8(cps.substr(i))));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !PythonSpace(cps[j])) ++j;
      parts.push_back(Value::String(Utf8(cps.substr(i, j - i))));
      i = j;
    }
    return parts;
  }
  const std::string& separator = sep->as_string();
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t at = text.find(separator, start);
    if (at == std::string::npos) break;
    parts.push_back(Value::String(text.substr(start, at - start)));
    start = at + separator.size();
  }
  parts.push_back(Value::String(text.substr(start)));
  return parts;
}

// str.rsplit: str.split of the text read backwards (code point by code point, the separator too), each part and
// their order turned back.
std::vector<Value> RSplit(const std::string& text, const Value* sep, int64_t maxsplit) {
  auto reversed = [](const std::string& t) {
    std::u32string cps = CodePoints(t);
    std::reverse(cps.begin(), cps.end());
    return Utf8(cps);
  };
  const Value reversed_sep = sep != nullptr && sep->is_string() ? Value::String(reversed(sep->as_string())) : Value::None();
  std::vector<Value> parts = Split(reversed(text), &reversed_sep, maxsplit);
  std::reverse(parts.begin(), parts.end());
  for (Value& part : parts) part = Value::String(reversed(part.as_string()));
  return parts;
}

// str.splitlines(keepends): the line boundaries Python's str knows.
std::vector<Value> SplitLines(const std::string& text, bool keepends) {
  const std::u32string cps = CodePoints(text);
  auto boundary = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  std::vector<Value> lines;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!boundary(cps[i])) continue;
    const size_t end = i;
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    lines.push_back(Value::String(Utf8(cps.substr(start, (keepends ? i + 1 : end) - start))));
    start = i + 1;
  }
  if (start < cps.size()) lines.push_back(Value::String(Utf8(cps.substr(start))));
  return lines;
}

std::string Replace(const std::string& text, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  if (from.empty()) {  // Python inserts `to` around every character
    const std::u32string cps = CodePoints(text);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) out += Utf8(std::u32string(1, cps[i]));
    }
    return out;
  }
  while (count < 0 || done < count) {
    const size_t at = text.find(from, start);
    if (at == std::string::npos) break;
    out.append(text, start, at - start);
    out += to;
    start = at + from.size();
    ++done;
  }
  out.append(text, start, std::string::npos);
  return out;
}

}  // namespace arach::jinja
