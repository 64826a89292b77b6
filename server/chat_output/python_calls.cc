#include "server/chat_output/python_calls.h"

#include <cctype>
#include <charconv>

#include "absl/strings/ascii.h"
#include "engine/tokenizer/unicode.h"
#include "nlohmann/json.hpp"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;  // keys in the order the model wrote them, as Python's dicts keep them

// Nesting deeper than this is not read (a model's runaway brackets must not exhaust the stack).
constexpr int kMaxDepth = 64;

bool IsIdentifierStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads Python source text: tokens with the whitespace between them skipped. Each reading method returns
// nullopt (or false) when the text at the position is not what it reads.
class PythonReader {
 public:
  explicit PythonReader(absl::string_view text) : text_(text) {}

  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }
  // Where reading stopped. A read that failed there at the end of the text may be one that more text completes
  // (every read that runs out of text fails with pos() at its end).
  size_t pos() const { return pos_; }
  // Consumes `c` (after whitespace) when it comes next.
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  std::optional<std::string> Identifier() {
    SkipSpace();
    if (pos_ >= text_.size() || !IsIdentifierStart(text_[pos_])) return std::nullopt;
    const size_t begin = pos_;
    while (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }

  // A literal: a string, a number (with its sign), True, False, None, a list, a tuple or a dict.
  std::optional<ordered_json> Literal(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    SkipSpace();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return String();
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c)) != 0) return Number();
    if (c == '[') return Sequence(depth, '[', ']');
    if (c == '(') return Sequence(depth, '(', ')');
    if (c == '{') return Dict(depth);
    const std::optional<std::string> name = Identifier();
    if (name == "True") return ordered_json(true);
    if (name == "False") return ordered_json(false);
    if (name == "None") return ordered_json(nullptr);
    return std::nullopt;  // a variable or a call: not a literal
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  // A quoted string, single or triple, with Python's escapes.
  std::optional<ordered_json> String() {
    const char quote = text_[pos_];
    const bool triple = text_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == quote && (!triple || text_.substr(pos_, 3) == std::string(3, quote))) {
        pos_ += triple ? 3 : 1;
        return ordered_json(std::move(out));
      }
      if ((c == '\n' || c == '\r') && !triple) return std::nullopt;  // an unterminated one-line string
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (!Escape(out)) return std::nullopt;
    }
    return std::nullopt;
  }

  // The escape at pos_ (a backslash), appended to `out`.
  bool Escape(std::string& out) {
    ++pos_;
    if (pos_ >= text_.size()) return false;
    const char e = text_[pos_++];
    switch (e) {
      case '\n': return true;  // a line continuation
      case '\\': out += '\\'; return true;
      case '\'': out += '\''; return true;
      case '"': out += '"'; return true;
      case 'n': out += '\n'; return true;
      case 't': out += '\t'; return true;
      case 'r': out += '\r'; return true;
      case 'a': out += '\a'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'v': out += '\v'; return true;
      case 'x': return HexEscape(out, 2);
      case 'u': return HexEscape(out, 4);
      case 'U': return HexEscape(out, 8);
      default: break;
    }
    if (e >= '0' && e <= '7') {  // octal, up to three digits
      uint32_t value = static_cast<uint32_t>(e - '0');
      for (int i = 0; i < 2 && pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '7'; ++i) {
        value = value * 8 + static_cast<uint32_t>(text_[pos_++] - '0');
      }
      AppendUtf8(static_cast<char32_t>(value), out);
      return true;
    }
    out += '\\';  // Python keeps an unknown escape as written
    out += e;
    return true;
  }

  bool HexEscape(std::string& out, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= text_.size() || HexValue(text_[pos_]) < 0) return false;
      value = value * 16 + static_cast<uint32_t>(HexValue(text_[pos_++]));
    }
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;  // JSON text cannot hold it
    AppendUtf8(static_cast<char32_t>(value), out);
    return true;
  }

  // A decimal number: an int or a float (digits may be grouped by underscores), with an optional sign.
  std::optional<ordered_json> Number() {
    std::string digits;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      if (text_[pos_] == '-') digits += '-';
      ++pos_;
      SkipSpace();
    }
    bool is_float = false, any_digit = false;
    const auto take_digits = [&] {
      while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_')) {
        if (text_[pos_] != '_') {
          digits += text_[pos_];
          any_digit = true;
        }
        ++pos_;
      }
    };
    take_digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {  // JSON wants digits on both sides: .5 -> 0.5, 5. -> 5.0
      is_float = true;
      digits += any_digit ? "." : "0.";
      ++pos_;
      const size_t before = digits.size();
      take_digits();
      if (digits.size() == before) digits += '0';
    }
    if (!any_digit) return std::nullopt;
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      is_float = true;
      digits += 'e';
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) digits += text_[pos_++];
      const size_t before = digits.size();
      take_digits();
      if (digits.size() == before) return std::nullopt;
    }
    if (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) return std::nullopt;  // 0x1F, 1j, 12abc
    if (!is_float) {
      int64_t value = 0;
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (error == std::errc() && end == digits.data() + digits.size()) return ordered_json(value);
    }
    ordered_json parsed = ordered_json::parse(digits, nullptr, /*allow_exceptions=*/false);  // a float, or an int beyond 64 bits
    if (parsed.is_discarded() || !parsed.is_number()) return std::nullopt;
    return parsed;
  }

  // A list or a tuple (both JSON arrays); `(x)` without a comma is x itself.
  std::optional<ordered_json> Sequence(int depth, char open, char close) {
    ++pos_;  // the opening bracket
    ordered_json items = ordered_json::array();
    bool trailing_comma = false;
    while (!Eat(close)) {
      if (!items.empty() && !trailing_comma) return std::nullopt;
      std::optional<ordered_json> item = Literal(depth + 1);
      if (!item) return std::nullopt;
      items.push_back(std::move(*item));
      trailing_comma = Eat(',');
    }
    if (open == '(' && items.size() == 1 && !trailing_comma) return items[0];
    return items;
  }

  // A dict whose keys are strings or numbers (a number key becomes its text, as json.dumps writes it).
  std::optional<ordered_json> Dict(int depth) {
    ++pos_;  // {
    ordered_json object = ordered_json::object();
    bool separated = true;
    while (!Eat('}')) {
      if (!separated) return std::nullopt;
      std::optional<ordered_json> key = Literal(depth + 1);
      if (!key || !(key->is_string() || key->is_number()) || !Eat(':')) return std::nullopt;
      std::optional<ordered_json> value = Literal(depth + 1);
      if (!value) return std::nullopt;
      object[key->is_string() ? key->get<std::string>() : key->dump()] = std::move(*value);
      separated = Eat(',');
    }
    return object;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// One `name(key=value, ...)`.
std::optional<ParsedToolCall> ReadCall(PythonReader& reader) {
  std::optional<std::string> name = reader.Identifier();
  if (!name || !reader.Eat('(')) return std::nullopt;
  ordered_json arguments = ordered_json::object();
  bool separated = true;
  while (!reader.Eat(')')) {
    if (!separated) return std::nullopt;
    std::optional<std::string> key = reader.Identifier();
    if (!key || !reader.Eat('=') || reader.Peek('=')) return std::nullopt;  // positional, or a comparison
    if (arguments.contains(*key)) return std::nullopt;                      // Python: a repeated keyword argument
    std::optional<ordered_json> value = reader.Literal(0);
    if (!value) return std::nullopt;
    arguments[*key] = std::move(*value);
    separated = reader.Eat(',');
  }
  return ParsedToolCall{std::move(*name), arguments.dump(-1, ' ', false, ordered_json::error_handler_t::replace)};
}

}  // namespace

bool IsPythonIdentifier(absl::string_view name) {
  if (name.empty() || !IsIdentifierStart(name.front())) return false;
  for (const char c : name) {
    if (!IsIdentifierChar(c)) return false;
  }
  return true;
}

PythonCallRead ReadPythonCall(absl::string_view text) {
  PythonReader reader(text);
  std::optional<ParsedToolCall> call = ReadCall(reader);
  PythonCallRead read;
  if (call) {
    read.result = PythonCallRead::Result::kCall;
    read.call = std::move(*call);
    read.length = reader.pos();
  } else if (reader.pos() == text.size()) {
    read.result = PythonCallRead::Result::kIncomplete;
  }
  return read;
}

std::optional<std::vector<ParsedToolCall>> ParsePythonCalls(absl::string_view text) {
  PythonReader reader(text);
  if (!reader.Eat('[')) return std::nullopt;
  std::vector<ParsedToolCall> calls;
  bool separated = true;
  while (!reader.Eat(']')) {
    if (!separated) return std::nullopt;
    std::optional<ParsedToolCall> call = ReadCall(reader);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    separated = reader.Eat(',');
  }
  if (calls.empty() || !reader.AtEnd()) return std::nullopt;
  return calls;
}

}  // namespace arach::server
