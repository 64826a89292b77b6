// The methods of Python's str that templates call (x.strip(), x.split('</think>')[-1], '{} {}'.format(a, b)).
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/chat/jinja_text.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

// The code point index of byte offset `at` in `text` (Python's str indices count characters).
int64_t CharIndex(const std::string& text, size_t at) { return static_cast<int64_t>(CodePoints(text.substr(0, at)).size()); }

// str.format(*args, **kwargs): fields {} {0} {name}, with !s or !r, and {{ }}; format specs (:>8) and
// attribute or item lookups inside a field are refused by name rather than printed some other way.
absl::StatusOr<std::string> BraceFormat(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t next_auto = 0;
  bool automatic = false, manual = false;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return TypeError("format: single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i + 1);
    if (close == std::string::npos) return TypeError("format: single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size() || (field[bang + 1] != 's' && field[bang + 1] != 'r')) {
        return TypeError(absl::StrCat("format: the field {", field, "} is not supported (conversions !s and !r only)"));
      }
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find_first_of(":.[") != std::string::npos) {
      return TypeError(absl::StrCat("format: the field {", field, "} is not supported (format specs and lookups inside fields)"));
    }
    const Value* value = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      (field.empty() ? automatic : manual) = true;
      if (automatic && manual) return TypeError("format: cannot switch between automatic and manual field numbering");
      size_t index = next_auto;
      if (field.empty()) {
        ++next_auto;
      } else {
        for (char d : field) {
          if (!std::isdigit(static_cast<unsigned char>(d)) || index > 1'000'000) return TypeError(absl::StrCat("format: bad field {", field, "}"));
        }
        index = std::stoul(field);
      }
      if (index >= args.positional.size()) return TypeError(absl::StrCat("format: replacement index ", index, " out of range"));
      value = &args.positional[index];
    } else {
      for (const auto& [name, v] : args.keyword) {
        if (name == field) value = &v;
      }
      if (value == nullptr) return TypeError(absl::StrCat("format: no keyword argument '", field, "'"));
    }
    out += conversion == 'r' ? value->Repr() : value->Str();
  }
  return out;
}

}  // namespace

absl::StatusOr<Value> StringMethod(const std::string& text, const std::string& name) {
  auto method = [&](Function fn) { return Value::MakeFunction(name, std::move(fn)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return method([text, left, right](CallArgs& a) -> absl::StatusOr<Value> {
      return Value::String(Strip(text, Arg(a, 0, "chars"), left, right));
    });
  }
  if (name == "split" || name == "rsplit") {
    const bool from_right = name == "rsplit";
    return method([text, from_right](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* sep = Arg(a, 0, "sep");
      if (sep != nullptr && !sep->is_none() && (!sep->is_string() || sep->as_string().empty())) {
        return TypeError("split: the separator must be a non-empty string");
      }
      ARACH_ASSIGN_OR_RETURN(int64_t maxsplit, ArgInt(a, 1, "maxsplit", -1));
      return Value::List(from_right ? RSplit(text, sep, maxsplit) : Split(text, sep, maxsplit));
    });
  }
  if (name == "splitlines") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> { return Value::List(SplitLines(text, ArgBool(a, 0, "keepends", false))); });
  }
  if (name == "startswith" || name == "endswith") {
    const bool starts = name == "startswith";
    return method([text, starts](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* affix = Arg(a, 0, "prefix");
      if (affix == nullptr) return TypeError("startswith/endswith need an argument");
      std::vector<Value> options = affix->is_list() ? affix->list() : std::vector<Value>{*affix};
      for (const Value& option : options) {
        if (!option.is_string()) return TypeError("startswith/endswith take strings");
        const std::string& s = option.as_string();
        const bool match = s.size() <= text.size() &&
                           (starts ? text.compare(0, s.size(), s) == 0 : text.compare(text.size() - s.size(), s.size(), s) == 0);
        if (match) return Value::Bool(true);
      }
      return Value::Bool(false);
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const bool prefix = name == "removeprefix";
    return method([text, prefix](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string affix, ArgString(a, 0, prefix ? "prefix" : "suffix"));
      if (affix.size() > text.size()) return Value::String(text);
      if (prefix) return Value::String(text.compare(0, affix.size(), affix) == 0 ? text.substr(affix.size()) : text);
      const size_t keep = text.size() - affix.size();
      return Value::String(text.compare(keep, affix.size(), affix) == 0 ? text.substr(0, keep) : text);
    });
  }
  if (name == "upper") return method([text](CallArgs&) -> absl::StatusOr<Value> { return Value::String(Upper(text)); });
  if (name == "lower") return method([text](CallArgs&) -> absl::StatusOr<Value> { return Value::String(Lower(text)); });
  if (name == "title") return method([text](CallArgs&) -> absl::StatusOr<Value> { return Value::String(PythonTitle(text)); });
  if (name == "capitalize") return method([text](CallArgs&) -> absl::StatusOr<Value> { return Value::String(Capitalize(text)); });
  if (name == "replace") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string from, ArgString(a, 0, "old"));
      ARACH_ASSIGN_OR_RETURN(std::string to, ArgString(a, 1, "new"));
      ARACH_ASSIGN_OR_RETURN(int64_t count, ArgInt(a, 2, "count", -1));
      return Value::String(Replace(text, from, to, count));
    });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const bool from_right = name[0] == 'r', raises = name.find("index") != std::string::npos;
    return method([text, from_right, raises](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string sub, ArgString(a, 0, "sub"));
      const size_t at = from_right ? text.rfind(sub) : text.find(sub);
      if (at != std::string::npos) return Value::Int(CharIndex(text, at));
      if (raises) return TypeError("substring not found");
      return Value::Int(-1);
    });
  }
  if (name == "count") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string sub, ArgString(a, 0, "sub"));
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePoints(text).size()) + 1);
      int64_t n = 0;
      for (size_t at = text.find(sub); at != std::string::npos; at = text.find(sub, at + sub.size())) ++n;
      return Value::Int(n);
    });
  }
  if (name == "join") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* items = Arg(a, 0, "iterable");
      if (items == nullptr) return TypeError("join needs a list");
      ARACH_ASSIGN_OR_RETURN(std::vector<Value> values, Iterate(*items));
      std::string out;
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].is_string()) return TypeError(absl::StrCat("sequence item ", i, ": expected str instance, ", values[i].TypeName(), " found"));
        if (i) out += text;
        out += values[i].as_string();
      }
      return Value::String(out);
    });
  }
  if (name == "format") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string formatted, BraceFormat(text, a));
      return Value::String(std::move(formatted));
    });
  }
  return Value::Undefined(absl::StrCat("'str object' has no attribute '", name, "'"));
}

}  // namespace arach::jinja
