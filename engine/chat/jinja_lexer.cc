#include "engine/chat/jinja_lexer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/tokenizer/unicode.h"

namespace arach::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f); }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "\r\n" and "\r" become "\n"; one trailing newline goes (keep_trailing_newline=False).
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    bool line_starting = true;  // the previous tag's match ended with a newline (or nothing came before)
    while (pos < src_.size()) {
      const size_t open = FindOpening(pos);
      if (open == std::string::npos) {
        Emit(Token::Type::kText, src_.substr(pos), pos);
        break;
      }
      const char kind = src_[open + 1];  // '{' variable, '%' block, '#' comment
      const char sign = open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+') ? src_[open + 2] : 0;
      std::string text = src_.substr(pos, open - pos);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && IsSpace(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_start > 0 || line_starting) {
          const bool only_spaces = line_start < text.size() &&
                                   std::all_of(text.begin() + static_cast<long>(line_start), text.end(), IsSpace);
          if (only_spaces) text.resize(line_start);
        }
      }
      if (!text.empty()) Emit(Token::Type::kText, text, pos);
      size_t after;
      absl::StatusOr<size_t> raw_end = kind == '%' ? LexRaw(open, sign) : std::string::npos;
      if (!raw_end.ok()) return raw_end.status();
      if (*raw_end != std::string::npos) {
        after = *raw_end;
      } else if (kind == '#') {
        const size_t close = src_.find("#}", open + 2);
        if (close == std::string::npos) return Error(open, "the comment is never closed with #}");
        after = close + 2;
        after = TrimAfterTag(close > open + 2 && src_[close - 1] == '-', /*trim_newline=*/true, after);
      } else {
        const bool block = kind == '%';
        Emit(block ? Token::Type::kBlockBegin : Token::Type::kVariableBegin, block ? "{%" : "{{", open);
        absl::StatusOr<size_t> close = LexExpression(open + 2 + (sign ? 1 : 0), block);
        if (!close.ok()) return close.status();
        const bool strip = src_[*close] == '-';
        Emit(block ? Token::Type::kBlockEnd : Token::Type::kVariableEnd, block ? "%}" : "}}", *close);
        after = *close + (strip ? 3 : 2);
        after = TrimAfterTag(strip, /*trim_newline=*/block, after);
      }
      line_starting = after > 0 && src_[after - 1] == '\n';
      pos = after;
    }
    Emit(Token::Type::kEnd, "", src_.size());
    return std::move(tokens_);
  }

 private:
  // The next "{{", "{%" or "{#" at or after `pos`.
  size_t FindOpening(size_t pos) const {
    for (size_t i = pos; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // {% raw %}...{% endraw %} at `open`: its text as it stands, one token; returns the offset after {% endraw %}, or
  // npos when the tag there is not raw. As Jinja2 lexes it: "-" on either tag strips the whitespace beside the text,
  // lstrip_blocks applies to {% endraw %}, trim_blocks to its newline but not to {% raw %}'s.
  absl::StatusOr<size_t> LexRaw(size_t open, char sign) {
    size_t p = SkipSpaces(open + 2 + (sign ? 1 : 0));
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && (IsNameStart(src_[p + 3]) || IsDigit(src_[p + 3])))) {
      return std::string::npos;
    }
    p = SkipSpaces(p + 3);
    const bool strip_start = p < src_.size() && src_[p] == '-';
    if (strip_start) ++p;
    if (src_.compare(p, 2, "%}") != 0) return Error(p, "expected '%}' after raw");
    size_t begin = p + 2;
    if (strip_start) begin = SkipSpaces(begin);
    for (size_t close = src_.find("{%", begin); close != std::string::npos; close = src_.find("{%", close + 2)) {
      size_t q = close + 2;
      const char end_sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q++] : 0;
      q = SkipSpaces(q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = SkipSpaces(q + 6);
      const bool strip_end = q < src_.size() && src_[q] == '-';
      if (strip_end) ++q;
      if (src_.compare(q, 2, "%}") != 0) continue;
      std::string text = src_.substr(begin, close - begin);
      if (end_sign == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (end_sign != '+' && text.rfind('\n') != std::string::npos) {  // lstrip_blocks
        const size_t line_start = text.rfind('\n') + 1;
        if (std::all_of(text.begin() + static_cast<long>(line_start), text.end(), IsSpace)) text.resize(line_start);
      }
      if (!text.empty()) Emit(Token::Type::kText, text, begin);
      return TrimAfterTag(strip_end, /*trim_newline=*/true, q + 2);
    }
    return Error(open, "{% raw %} is never closed with {% endraw %}");
  }

  size_t SkipSpaces(size_t pos) const {
    while (pos < src_.size() && IsSpace(src_[pos])) ++pos;
    return pos;
  }

  // After a tag: "-" strips all following whitespace; else trim_blocks drops one newline (blocks, comments).
  size_t TrimAfterTag(bool strip, bool trim_newline, size_t after) const {
    if (strip) {
      while (after < src_.size() && IsSpace(src_[after])) ++after;
    } else if (trim_newline && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    return after;
  }

  // Tokens of an expression from `pos` to its closing delimiter; returns the closing's offset (at its "-" when
  // it has one). Inside brackets a "}}" or "%}" does not close.
  absl::StatusOr<size_t> LexExpression(size_t pos, bool block) {
    int depth = 0;
    while (true) {
      while (pos < src_.size() && IsSpace(src_[pos])) ++pos;
      if (pos >= src_.size()) return Error(pos, block ? "the tag is never closed with %}" : "the expression is never closed with }}");
      if (depth == 0) {
        const char* close = block ? "%}" : "}}";
        if (src_.compare(pos, 2, close) == 0) return pos;
        if (src_[pos] == '-' && src_.compare(pos + 1, 2, close) == 0) return pos;
      }
      const char c = src_[pos];
      if (IsNameStart(c)) {
        size_t end = pos;
        while (end < src_.size() && (IsNameStart(src_[end]) || IsDigit(src_[end]))) ++end;
        Emit(Token::Type::kName, src_.substr(pos, end - pos), pos);
        pos = end;
      } else if (IsDigit(c)) {
        absl::StatusOr<size_t> end = LexNumber(pos);
        if (!end.ok()) return end.status();
        pos = *end;
      } else if (c == '\'' || c == '"') {
        absl::StatusOr<size_t> end = LexString(pos);
        if (!end.ok()) return end.status();
        pos = *end;
      } else {
        static const char* kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                           ".",  ",",  ":",  "|",  "(",  ")",  "[", "]", "{", "}", ";"};
        const char* found = nullptr;
        for (const char* op : kOperators) {
          if (src_.compare(pos, std::char_traits<char>::length(op), op) == 0) {
            found = op;
            break;
          }
        }
        if (found == nullptr) return Error(pos, absl::StrCat("unexpected character '", std::string(1, c), "'"));
        const std::string op(found);
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) return Error(pos, absl::StrCat("unexpected '", op, "'"));
          --depth;
        }
        Emit(Token::Type::kOperator, op, pos);
        pos += op.size();
      }
    }
  }

  absl::StatusOr<size_t> LexNumber(size_t pos) {
    size_t end = pos;
    auto digits = [&] {
      while (end < src_.size() && (IsDigit(src_[end]) || (src_[end] == '_' && end + 1 < src_.size() && IsDigit(src_[end + 1])))) ++end;
    };
    digits();
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && IsDigit(src_[end + 1])) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && IsDigit(src_[exp])) {
        is_float = true;
        end = exp;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos; i < end; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    Emit(is_float ? Token::Type::kFloat : Token::Type::kInteger, text, pos);
    return end;
  }

  // A quoted literal with Python's escapes (\n \t \r \\ \' \" \xHH \uHHHH \UHHHHHHHH \a \b \f \v, octal \0 to \377);
  // \N{name} (Unicode's character names) is refused rather than written as it stands.
  absl::StatusOr<size_t> LexString(size_t pos) {
    const char quote = src_[pos];
    std::string value;
    size_t i = pos + 1;
    while (i < src_.size() && src_[i] != quote) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        value += src_[i++];
        continue;
      }
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
          uint32_t cp = static_cast<uint32_t>(e - '0');  // up to three octal digits, as Python reads them
          for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) cp = cp * 8 + static_cast<uint32_t>(src_[i++] - '0');
          AppendUtf8(static_cast<char32_t>(cp), value);
          break;
        }
        case 'N': return Error(i - 2, "\\N{...} escapes (Unicode character names) are not supported: write the character or \\u");
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // a line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + width > src_.size()) return Error(i, "a truncated \\x/\\u escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < width; ++k) {
            const char h = src_[i + k];
            const int digit = IsDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (digit < 0) return Error(i, "a malformed \\x/\\u escape");
            cp = cp * 16 + static_cast<uint32_t>(digit);
          }
          if (cp > 0x10FFFF) return Error(i, "an escape beyond U+10FFFF");
          AppendUtf8(static_cast<char32_t>(cp), value);
          i += width;
          break;
        }
        default:  // Python keeps unknown escapes as written
          value += '\\';
          value += e;
      }
    }
    if (i >= src_.size()) return Error(pos, "the string is never closed");
    Emit(Token::Type::kString, value, pos);
    return i + 1;
  }

  void Emit(Token::Type type, std::string value, size_t offset) {
    const auto [line, column] = Position(offset);
    tokens_.push_back(Token{type, std::move(value), line, column});
  }

  std::pair<int, int> Position(size_t offset) const {
    const size_t line = static_cast<size_t>(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1]) + 1};
  }

  absl::Status Error(size_t offset, const std::string& what) const {
    const auto [line, column] = Position(offset);
    return absl::InvalidArgumentError(absl::StrFormat("line %d, column %d: %s", line, column, what));
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) { return Lexer(NormalizeNewlines(source)).Run(); }

}  // namespace arach::jinja
