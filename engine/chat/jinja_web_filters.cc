#include "engine/chat/jinja_web_filters.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/core/markup_escape.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

// Python's urllib.parse.quote of str(value) as UTF-8: letters, digits and "_.-~" kept, "/" too unless
// `for_query` (then spaces become "+"), every other byte as %XX.
std::string UrlQuote(const Value& value, bool for_query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : value.Str()) {
    const unsigned char byte = static_cast<unsigned char>(ch);
    const bool unreserved = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
                            byte == '_' || byte == '.' || byte == '-' || byte == '~' || (byte == '/' && !for_query);
    if (unreserved) {
      out.push_back(ch);
    } else if (byte == ' ' && for_query) {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

// A (key, value) pair of a sequence given to urlencode: a two-item list or tuple, or a two-character string (Python
// unpacks any iterable of two).
absl::StatusOr<std::pair<Value, Value>> Pair(const Value& item) {
  std::vector<Value> parts;
  if (item.is_list() || item.is_string()) {
    ARACH_ASSIGN_OR_RETURN(parts, Iterate(item));
  } else {
    return TypeError(absl::StrCat("urlencode: cannot unpack non-iterable ", item.TypeName(), " object into a key and a value"));
  }
  if (parts.size() != 2) return TypeError(absl::StrCat("urlencode: a key and a value expected, got ", parts.size(), " items"));
  return std::pair{parts[0], parts[1]};
}

// Jinja2's attribute-name rule (3.1.3 on): no ASCII white space, "/", ">" or "=".
bool IsValidAttributeName(const std::string& key) {
  for (const char c : key) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '/' || c == '>' || c == '=') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Value> FilterUrlEncode(const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::String("");  // Jinja2's Undefined iterates as empty
  if (v.is_string() || !(v.is_list() || v.is_dict())) return Value::String(UrlQuote(v, false));
  std::vector<std::pair<Value, Value>> pairs;
  if (v.is_dict()) {
    for (const Value& item : DictItems(v.dict())) pairs.emplace_back(item.list()[0], item.list()[1]);
  } else {
    for (const Value& item : v.list()) {
      using KeyAndValue = std::pair<Value, Value>;
      ARACH_ASSIGN_OR_RETURN(KeyAndValue pair, Pair(item));
      pairs.push_back(std::move(pair));
    }
  }
  std::string out;
  for (const auto& [key, value] : pairs) {
    if (!out.empty()) out.push_back('&');
    absl::StrAppend(&out, UrlQuote(key, true), "=", UrlQuote(value, true));
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterXmlAttr(const Value& v, CallArgs& a) {
  if (!v.is_dict()) return TypeError(absl::StrCat("xmlattr needs a mapping, not ", v.TypeName()));
  const bool autospace = ArgBool(a, 0, "autospace", true);
  std::string out;  // each attribute led by a space, the first one's dropped without autospace
  for (const Value& item : DictItems(v.dict())) {
    const Value& key = item.list()[0];
    const Value& value = item.list()[1];
    if (value.is_none() || value.is_undefined()) continue;
    const std::string name = key.Str();
    if (!IsValidAttributeName(name)) return TypeError(absl::StrCat("xmlattr: invalid character in attribute name: '", name, "'"));
    absl::StrAppend(&out, " ", EscapeMarkup(name), "=\"", EscapeMarkup(value.Str()), "\"");
  }
  return Value::String(autospace || out.empty() ? out : out.substr(1));
}

}  // namespace arach::jinja
