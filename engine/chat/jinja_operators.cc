// The template operators with Python's semantics (+ - * / // % ** ~) and printf-style formatting.
#include "engine/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/chat/jinja_text.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {


absl::StatusOr<Value> Arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool floats = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_double() == 0.0) return TypeError("division by zero");
    return Value::Float(a.as_double() / b.as_double());
  }
  if (op == "**") {
    if (!floats && b.as_int() >= 0) {
      int64_t result = 1;
      for (int64_t i = 0; i < b.as_int(); ++i) {
        if (__builtin_mul_overflow(result, a.as_int(), &result)) return TypeError("integer overflow in **");
        if (result == 0 || result == 1) break;
      }
      return Value::Int(result);
    }
    return Value::Float(std::pow(a.as_double(), b.as_double()));
  }
  if (floats) {
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (y == 0.0) return TypeError("float division by zero");
    if (op == "//") return Value::Float(std::floor(x / y));
    const double r = std::fmod(x, y);  // %: the sign of the divisor
    return Value::Float(r != 0.0 && ((r < 0) != (y < 0)) ? r + y : r);
  }
  const int64_t x = a.as_int(), y = b.as_int();
  int64_t r = 0;
  if (op == "+") {
    if (__builtin_add_overflow(x, y, &r)) return TypeError("integer overflow");
    return Value::Int(r);
  }
  if (op == "-") {
    if (__builtin_sub_overflow(x, y, &r)) return TypeError("integer overflow");
    return Value::Int(r);
  }
  if (op == "*") {
    if (__builtin_mul_overflow(x, y, &r)) return TypeError("integer overflow");
    return Value::Int(r);
  }
  if (y == 0) return TypeError("integer division or modulo by zero");
  if (x == INT64_MIN && y == -1) return TypeError("integer overflow");
  int64_t q = x / y, m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) {
    --q;
    m += y;
  }
  return Value::Int(op == "//" ? q : m);
}

// A list or tuple of `items`, as `like` is.
Value SequenceLike(const Value& like, std::vector<Value> items) {
  return like.is_tuple() ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
}

absl::StatusOr<Value> Repeat(const Value& sequence, int64_t times) {
  if (times <= 0) return sequence.is_string() ? Value::String("") : SequenceLike(sequence, {});
  if (sequence.is_string()) {
    if (sequence.as_string().size() * static_cast<size_t>(times) > kMaxSequence) return TypeError("a repeated string is too long");
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value::String(out);
  }
  if (sequence.list().size() * static_cast<size_t>(times) > kMaxSequence) return TypeError("a repeated list is too long");
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.list().begin(), sequence.list().end());
  return SequenceLike(sequence, std::move(out));
}

std::string OperandError(const std::string& op, const Value& a, const Value& b) {
  return absl::StrCat("unsupported operand type(s) for ", op, ": '", a.TypeName(), "' and '", b.TypeName(), "'");
}

}  // namespace

absl::StatusOr<Value> BinaryOperation(const std::string& op, const Value& lhs, const Value& rhs) {
  if (op == "~") return Value::String(lhs.Str() + rhs.Str());  // undefined joins as ""
  if (lhs.is_undefined()) return UndefinedError(lhs);
  if (rhs.is_undefined()) return UndefinedError(rhs);
  if (lhs.is_number() && rhs.is_number()) return Arithmetic(op, lhs, rhs);
  if (op == "+") {
    if (lhs.is_string() && rhs.is_string()) return Value::String(lhs.as_string() + rhs.as_string());
    if (lhs.is_list() && rhs.is_list() && lhs.is_tuple() == rhs.is_tuple()) {  // list + list, tuple + tuple
      std::vector<Value> out = lhs.list();
      out.insert(out.end(), rhs.list().begin(), rhs.list().end());
      return SequenceLike(lhs, std::move(out));
    }
    if (lhs.is_string()) return TypeError(absl::StrCat("can only concatenate str (not \"", rhs.TypeName(), "\") to str"));
  }
  if (op == "*") {
    if ((lhs.is_string() || lhs.is_list()) && (rhs.is_int() || rhs.is_bool())) return Repeat(lhs, rhs.as_int());
    if ((rhs.is_string() || rhs.is_list()) && (lhs.is_int() || lhs.is_bool())) return Repeat(rhs, lhs.as_int());
  }
  if (op == "%" && lhs.is_string()) {
    std::vector<Value> args = rhs.is_list() && rhs.is_tuple() ? rhs.list() : std::vector<Value>{rhs};
    ARACH_ASSIGN_OR_RETURN(std::string text, PercentFormat(lhs.as_string(), args));
    return Value::String(std::move(text));
  }
  return TypeError(OperandError(op, lhs, rhs));
}

absl::StatusOr<std::string> PercentFormat(const std::string& format, const std::vector<Value>& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    std::string flags;
    while (j < format.size() && std::string("-+ 0#").find(format[j]) != std::string::npos) flags += format[j++];
    int width = 0;
    while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) width = std::min(width * 10 + (format[j++] - '0'), 1000);
    int precision = -1;
    if (j < format.size() && format[j] == '.') {
      precision = 0;
      ++j;
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) precision = std::min(precision * 10 + (format[j++] - '0'), 100);
    }
    if (j >= format.size()) return TypeError("incomplete format");
    const char conversion = format[j];
    i = j;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) return TypeError("not enough arguments for format string");
    const Value& arg = args[next++];
    std::string piece;
    switch (conversion) {
      case 's': piece = arg.Str(); break;
      case 'r': piece = arg.Repr(); break;
      case 'c':
        if (arg.is_string()) {
          piece = arg.as_string();
        } else if (arg.is_int()) {
          piece = Utf8(std::u32string(1, static_cast<char32_t>(std::clamp<int64_t>(arg.as_int(), 0, 0x10FFFF))));
        }
        break;
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!arg.is_number()) return TypeError(absl::StrCat("%", std::string(1, conversion), " format: a number is required, not ", arg.TypeName()));
        const int64_t v = arg.is_float() ? static_cast<int64_t>(arg.as_double()) : arg.as_int();
        piece = conversion == 'x' ? absl::StrFormat("%x", v)
                : conversion == 'X' ? absl::StrFormat("%X", v)
                : conversion == 'o' ? absl::StrFormat("%o", v)
                                    : absl::StrCat(v);
        if ((conversion == 'd' || conversion == 'i') && v >= 0 && flags.find('+') != std::string::npos) piece = "+" + piece;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        if (!arg.is_number()) return TypeError(absl::StrCat("%", std::string(1, conversion), " format: a real number is required, not ", arg.TypeName()));
        char buffer[512];
        const std::string spec = absl::StrCat("%", flags.find('+') != std::string::npos ? "+" : "", ".",
                                              precision < 0 ? 6 : precision, std::string(1, conversion));
        std::snprintf(buffer, sizeof(buffer), spec.c_str(), arg.as_double());
        piece = buffer;
        break;
      }
      default: return TypeError(absl::StrCat("unsupported format character '", std::string(1, conversion), "'"));
    }
    if (precision >= 0 && (conversion == 's' || conversion == 'r')) piece = Utf8(CodePoints(piece).substr(0, static_cast<size_t>(precision)));
    const int length = static_cast<int>(CodePoints(piece).size());
    if (width > length) {
      const size_t pad = static_cast<size_t>(width - length);
      if (flags.find('-') != std::string::npos) {
        piece += std::string(pad, ' ');
      } else if (flags.find('0') != std::string::npos && conversion != 's' && conversion != 'r') {
        const bool sign = !piece.empty() && (piece[0] == '-' || piece[0] == '+');
        piece.insert(sign ? 1 : 0, std::string(pad, '0'));
      } else {
        piece = std::string(pad, ' ') + piece;
      }
    }
    out += piece;
  }
  if (next < args.size()) return TypeError("not all arguments converted during string formatting");
  return out;
}

}  // namespace arach::jinja
