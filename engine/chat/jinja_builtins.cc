#include "engine/chat/jinja_builtins.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach::jinja {
namespace {

absl::Status TypeError(const std::string& what) { return absl::InvalidArgumentError(what); }

// ------------------------------------------------------------------ text helpers (code points, ICU case)

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

std::string Lower(const std::string& text) {
  std::string out;
  icu::UnicodeString::fromUTF8(text).toLower(icu::Locale::getRoot()).toUTF8String(out);
  return out;
}

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

bool PythonSpace(char32_t c) { return IsWhitespace(c) || (c >= 0x1c && c <= 0x1f); }

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

// str.split(sep=None, maxsplit=-1).
std::vector<Value> Split(const std::string& text, const Value* sep, int64_t maxsplit) {
  std::vector<Value> parts;
  if (sep == nullptr || sep->is_none()) {
    const std::u32string cps = CodePoints(text);
    size_t i = 0;
    while (true) {
      while (i < cps.size() && PythonSpace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = cps.size();
        while (end > i && PythonSpace(cps[end - 1])) --end;
        parts.push_back(Value::String(Utf8(cps.substr(i, end - i))));
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

// ------------------------------------------------------------------ arguments

// The argument at `index` or named `name`; null when absent.
const Value* Arg(const CallArgs& args, size_t index, const char* name) {
  if (index < args.positional.size()) return &args.positional[index];
  for (const auto& [key, value] : args.keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

bool ArgBool(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = Arg(args, index, name);
  return v == nullptr ? fallback : v->Truthy();
}

absl::StatusOr<int64_t> ArgInt(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
  const Value* v = Arg(args, index, name);
  if (v == nullptr || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) return TypeError(absl::StrCat("'", name, "' must be an integer, not ", v->TypeName()));
  return v->as_int();
}

absl::StatusOr<std::string> ArgString(const CallArgs& args, size_t index, const char* name) {
  const Value* v = Arg(args, index, name);
  if (v == nullptr) return TypeError(absl::StrCat("missing argument '", name, "'"));
  if (!v->is_string()) return TypeError(absl::StrCat("'", name, "' must be a string, not ", v->TypeName()));
  return v->as_string();
}

Value MakeMethod(const std::string& name, Function fn) { return Value::MakeFunction(name, std::move(fn)); }

// ------------------------------------------------------------------ common operations

absl::StatusOr<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(CodePoints(v.as_string()).size());
    case Value::Kind::kList: return static_cast<int64_t>(v.list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.dict().items.size());
    default: return TypeError(absl::StrCat("object of type '", v.TypeName(), "' has no len()"));
  }
}

// The value of `attribute` ("a.b" walks down) of each item, for map/sort/selectattr/join/sum.
absl::StatusOr<Value> AttributePath(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (numeric && current.is_list()) {
      const auto r = std::from_chars(part.data(), part.data() + part.size(), index);
      if (r.ec != std::errc()) return TypeError(absl::StrCat("the index ", part, " is out of range"));
      ARACH_ASSIGN_OR_RETURN(current, GetItem(current, Value::Int(index)));
    } else {
      ARACH_ASSIGN_OR_RETURN(current, GetAttribute(current, part));
    }
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// The sort key comparison of sort/unique/dictsort: strings compare lower-cased unless case sensitive.
Value SortKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::String(Lower(v.as_string()));
  return v;
}

absl::StatusOr<std::vector<Value>> SortedValues(std::vector<Value> items, bool reverse, bool case_sensitive,
                                                const std::string& attribute) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = item;
    if (!attribute.empty()) {
      ARACH_ASSIGN_OR_RETURN(key, AttributePath(item, attribute));
    }
    keyed.emplace_back(SortKey(key, case_sensitive), std::move(item));
  }
  absl::Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    absl::StatusOr<bool> less = reverse ? b.first.Less(a.first) : a.first.Less(b.first);
    if (!less.ok()) {
      error = less.status();
      return false;
    }
    return *less;
  });
  if (!error.ok()) return error;
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return out;
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Jinja2's int filter: ints and floats truncate, strings parse (as int, else as float), else the default.
Value ToInt(const Value& v, int64_t fallback, int base) {
  if (v.is_int() || v.is_bool()) return Value::Int(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::abs(d) > 9.2e18) return Value::Int(fallback);
    return Value::Int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    const std::string s = Strip(v.as_string(), nullptr, true, true);
    errno = 0;
    char* end = nullptr;
    const long long parsed = std::strtoll(s.c_str(), &end, base);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::Int(parsed);
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::abs(d) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(d));
    }
  }
  return Value::Int(fallback);
}

Value ToFloat(const Value& v, double fallback) {
  if (v.is_number()) return Value::Float(v.as_double());
  if (v.is_string()) {
    const std::string s = Strip(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::Float(d);
  }
  return Value::Float(fallback);
}

std::string Indent(const std::string& text, const std::string& pad, bool first, bool blank) {
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const bool indent = (!first_line || first) && (blank || !Strip(line, nullptr, true, true).empty());
    if (indent) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return out;
}

// ------------------------------------------------------------------ filters

using FilterFn = absl::StatusOr<Value> (*)(const Value&, CallArgs&);

absl::StatusOr<Value> FilterTrim(const Value& v, CallArgs& a) {
  return Value::String(Strip(v.Str(), Arg(a, 0, "chars"), true, true));
}
absl::StatusOr<Value> FilterUpper(const Value& v, CallArgs&) { return Value::String(Upper(v.Str())); }
absl::StatusOr<Value> FilterLower(const Value& v, CallArgs&) { return Value::String(Lower(v.Str())); }
absl::StatusOr<Value> FilterCapitalize(const Value& v, CallArgs&) { return Value::String(Capitalize(v.Str())); }
absl::StatusOr<Value> FilterTitle(const Value& v, CallArgs&) { return Value::String(JinjaTitle(v.Str())); }
absl::StatusOr<Value> FilterLength(const Value& v, CallArgs&) {
  ARACH_ASSIGN_OR_RETURN(int64_t n, Length(v));
  return Value::Int(n);
}

absl::StatusOr<Value> FilterFirst(const Value& v, CallArgs&) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  return items.empty() ? Value::Undefined("No first item, sequence was empty.") : items.front();
}
absl::StatusOr<Value> FilterLast(const Value& v, CallArgs&) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  return items.empty() ? Value::Undefined("No last item, sequence was empty.") : items.back();
}

absl::StatusOr<Value> FilterJoin(const Value& v, CallArgs& a) {
  const Value* sep = Arg(a, 0, "d");
  const Value* attribute = Arg(a, 1, "attribute");
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && sep != nullptr) out += sep->Str();
    Value item = items[i];
    if (attribute != nullptr && !attribute->is_none()) {
      ARACH_ASSIGN_OR_RETURN(item, AttributePath(item, attribute->Str()));
    }
    out += item.Str();
  }
  return Value::String(out);
}

absl::StatusOr<Value> FilterReplace(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(std::string from, ArgString(a, 0, "old"));
  ARACH_ASSIGN_OR_RETURN(std::string to, ArgString(a, 1, "new"));
  ARACH_ASSIGN_OR_RETURN(int64_t count, ArgInt(a, 2, "count", -1));
  return Value::String(Replace(v.Str(), from, to, count));
}

absl::StatusOr<Value> FilterDefault(const Value& v, CallArgs& a) {
  const Value* fallback = Arg(a, 0, "default_value");
  const bool boolean = ArgBool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.Truthy())) return fallback != nullptr ? *fallback : Value::String("");
  return v;
}

absl::StatusOr<Value> FilterList(const Value& v, CallArgs&) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  return Value::List(std::move(items));
}

absl::StatusOr<Value> FilterUnique(const Value& v, CallArgs& a) {
  const bool case_sensitive = ArgBool(a, 0, "case_sensitive", false);
  const Value* attribute = Arg(a, 1, "attribute");
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::vector<Value> seen, out;
  for (const Value& item : items) {
    Value key = item;
    if (attribute != nullptr && !attribute->is_none()) {
      ARACH_ASSIGN_OR_RETURN(key, AttributePath(item, attribute->Str()));
    }
    key = SortKey(key, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.Equals(key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterSort(const Value& v, CallArgs& a) {
  const Value* attribute = Arg(a, 2, "attribute");
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                         SortedValues(std::move(items), ArgBool(a, 0, "reverse", false), ArgBool(a, 1, "case_sensitive", false),
                                      attribute != nullptr && !attribute->is_none() ? attribute->Str() : ""));
  return Value::List(std::move(sorted));
}

absl::StatusOr<Value> FilterReverse(const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::u32string cps = CodePoints(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::String(Utf8(cps));
  }
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

absl::StatusOr<Value> FilterMap(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::vector<Value> out;
  if (const Value* attribute = Arg(a, 99, "attribute"); attribute != nullptr) {
    const Value* fallback = Arg(a, 99, "default");
    for (const Value& item : items) {
      ARACH_ASSIGN_OR_RETURN(Value mapped, AttributePath(item, attribute->Str()));
      out.push_back(mapped.is_undefined() && fallback != nullptr ? *fallback : mapped);
    }
    return Value::List(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) return TypeError("map needs a filter name or attribute=");
  const std::string filter = a.positional[0].as_string();
  if (!IsKnownFilter(filter)) return TypeError(absl::StrCat("map: unknown filter '", filter, "'"));
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : items) {
    CallArgs copy = rest;
    ARACH_ASSIGN_OR_RETURN(Value mapped, ApplyFilter(filter, item, copy));
    out.push_back(std::move(mapped));
  }
  return Value::List(std::move(out));
}

// select / reject / selectattr / rejectattr.
absl::StatusOr<Value> SelectItems(const Value& v, CallArgs& a, bool by_attribute, bool keep) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (a.positional.empty()) return TypeError("selectattr/rejectattr need an attribute name");
    attribute = a.positional[next++].Str();
  }
  std::string test;
  if (next < a.positional.size()) test = a.positional[next++].Str();
  if (!test.empty() && !IsKnownTest(test)) return TypeError(absl::StrCat("unknown test '", test, "'"));
  CallArgs test_args;
  test_args.positional.assign(a.positional.begin() + static_cast<long>(std::min(next, a.positional.size())), a.positional.end());
  std::vector<Value> out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attribute) {
      ARACH_ASSIGN_OR_RETURN(subject, AttributePath(item, attribute));
    }
    bool passed = subject.Truthy();
    if (!test.empty()) {
      CallArgs copy = test_args;
      ARACH_ASSIGN_OR_RETURN(passed, ApplyTest(test, subject, copy));
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}
absl::StatusOr<Value> FilterSelect(const Value& v, CallArgs& a) { return SelectItems(v, a, false, true); }
absl::StatusOr<Value> FilterReject(const Value& v, CallArgs& a) { return SelectItems(v, a, false, false); }
absl::StatusOr<Value> FilterSelectAttr(const Value& v, CallArgs& a) { return SelectItems(v, a, true, true); }
absl::StatusOr<Value> FilterRejectAttr(const Value& v, CallArgs& a) { return SelectItems(v, a, true, false); }

absl::StatusOr<Value> FilterToJson(const Value& v, CallArgs& a) {
  JsonOptions options;
  if (const Value* indent = Arg(a, 99, "indent"); indent != nullptr && !indent->is_none()) {
    if (!indent->is_int()) return TypeError("tojson: indent must be an integer");
    options.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
  } else if (!a.positional.empty() && a.positional[0].is_int()) {
    options.indent = static_cast<int>(std::clamp<int64_t>(a.positional[0].as_int(), 0, 64));
  }
  options.sort_keys = ArgBool(a, 99, "sort_keys", false);
  if (const Value* separators = Arg(a, 99, "separators"); separators != nullptr && separators->is_list() &&
                                                           separators->list().size() == 2) {
    options.item_separator = separators->list()[0].Str();
    options.key_separator = separators->list()[1].Str();
  }
  ARACH_ASSIGN_OR_RETURN(std::string text, ToJson(v, options));
  return Value::String(std::move(text));
}

absl::StatusOr<Value> FilterString(const Value& v, CallArgs&) { return Value::String(v.Str()); }
absl::StatusOr<Value> FilterInt(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(int64_t fallback, ArgInt(a, 0, "default", 0));
  ARACH_ASSIGN_OR_RETURN(int64_t base, ArgInt(a, 1, "base", 10));
  if (base < 2 || base > 36) return TypeError("int: base must be in [2, 36]");
  return ToInt(v, fallback, static_cast<int>(base));
}
absl::StatusOr<Value> FilterFloat(const Value& v, CallArgs& a) {
  const Value* fallback = Arg(a, 0, "default");
  return ToFloat(v, fallback != nullptr && fallback->is_number() ? fallback->as_double() : 0.0);
}
absl::StatusOr<Value> FilterAbs(const Value& v, CallArgs&) {
  if (v.is_float()) return Value::Float(std::abs(v.as_double()));
  if (v.is_int() || v.is_bool()) return Value::Int(v.as_int() < 0 ? -v.as_int() : v.as_int());
  return TypeError(absl::StrCat("bad operand type for abs(): '", v.TypeName(), "'"));
}
absl::StatusOr<Value> FilterSum(const Value& v, CallArgs& a) {
  const Value* attribute = Arg(a, 0, "attribute");
  const Value* start = Arg(a, 1, "start");
  Value total = start != nullptr ? *start : Value::Int(0);
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  for (const Value& item : items) {
    Value term = item;
    if (attribute != nullptr && !attribute->is_none()) {
      ARACH_ASSIGN_OR_RETURN(term, AttributePath(item, attribute->Str()));
    }
    ARACH_ASSIGN_OR_RETURN(total, BinaryOperation("+", total, term));
  }
  return total;
}

std::vector<Value> DictItems(const Dict& dict) {
  std::vector<Value> out;
  for (const auto& [key, value] : dict.items) out.push_back(Value::Tuple({Value::String(key), value}));
  return out;
}

absl::StatusOr<Value> FilterItems(const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::List({});
  if (!v.is_dict()) return TypeError(absl::StrCat("items: expected a mapping, got ", v.TypeName()));
  return Value::List(DictItems(v.dict()));
}

absl::StatusOr<Value> FilterDictSort(const Value& v, CallArgs& a) {
  if (!v.is_dict()) return TypeError(absl::StrCat("dictsort: expected a mapping, got ", v.TypeName()));
  const bool case_sensitive = ArgBool(a, 0, "case_sensitive", false);
  const Value* by = Arg(a, 1, "by");
  const bool by_value = by != nullptr && by->Str() == "value";
  const bool reverse = ArgBool(a, 2, "reverse", false);
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                         SortedValues(DictItems(v.dict()), reverse, case_sensitive, by_value ? "1" : "0"));
  return Value::List(std::move(sorted));
}

absl::StatusOr<Value> FilterFormat(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(std::string text, PercentFormat(v.Str(), a.positional));
  return Value::String(std::move(text));
}

absl::StatusOr<Value> FilterIndent(const Value& v, CallArgs& a) {
  const Value* width = Arg(a, 0, "width");
  std::string pad = "    ";
  if (width != nullptr && width->is_string()) pad = width->as_string();
  if (width != nullptr && (width->is_int())) pad = std::string(static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 256)), ' ');
  return Value::String(Indent(v.Str(), pad, ArgBool(a, 1, "first", false), ArgBool(a, 2, "blank", false)));
}

absl::StatusOr<Value> FilterSafe(const Value& v, CallArgs&) { return v; }
absl::StatusOr<Value> FilterEscape(const Value& v, CallArgs&) { return Value::String(HtmlEscape(v.Str())); }

struct NamedFilter {
  const char* name;
  FilterFn fn;
};
constexpr NamedFilter kFilters[] = {
    {"trim", FilterTrim},         {"upper", FilterUpper},         {"lower", FilterLower},
    {"capitalize", FilterCapitalize}, {"title", FilterTitle},     {"length", FilterLength},
    {"count", FilterLength},      {"first", FilterFirst},         {"last", FilterLast},
    {"join", FilterJoin},         {"replace", FilterReplace},     {"default", FilterDefault},
    {"d", FilterDefault},         {"list", FilterList},           {"unique", FilterUnique},
    {"sort", FilterSort},         {"reverse", FilterReverse},     {"map", FilterMap},
    {"select", FilterSelect},     {"reject", FilterReject},       {"selectattr", FilterSelectAttr},
    {"rejectattr", FilterRejectAttr}, {"tojson", FilterToJson},   {"string", FilterString},
    {"int", FilterInt},           {"float", FilterFloat},         {"abs", FilterAbs},
    {"sum", FilterSum},           {"items", FilterItems},         {"dictsort", FilterDictSort},
    {"format", FilterFormat},     {"indent", FilterIndent},       {"safe", FilterSafe},
    {"e", FilterEscape},          {"escape", FilterEscape},
};

// ------------------------------------------------------------------ tests

absl::StatusOr<bool> CompareTest(const std::string& name, const Value& v, const Value& other) {
  if (name == "eq" || name == "equalto" || name == "==") return v.Equals(other);
  if (name == "ne" || name == "!=") return !v.Equals(other);
  if (name == "lt" || name == "lessthan") return v.Less(other);
  if (name == "gt" || name == "greaterthan") return other.Less(v);
  if (name == "le") {
    ARACH_ASSIGN_OR_RETURN(bool greater, other.Less(v));
    return !greater;
  }
  ARACH_ASSIGN_OR_RETURN(bool less, v.Less(other));  // ge
  return !less;
}

constexpr const char* kTests[] = {"defined", "undefined", "none", "string", "number", "integer", "float", "mapping",
                                  "iterable", "sequence", "boolean", "true", "false", "callable", "equalto", "eq", "ne",
                                  "lt", "gt", "le", "ge", "lessthan", "greaterthan", "odd", "even", "divisibleby",
                                  "in", "lower", "upper", "sameas"};

}  // namespace

// ------------------------------------------------------------------ public

bool IsKnownFilter(std::string_view name) {
  return std::any_of(std::begin(kFilters), std::end(kFilters), [&](const NamedFilter& f) { return name == f.name; });
}

bool IsKnownTest(std::string_view name) {
  return std::any_of(std::begin(kTests), std::end(kTests), [&](const char* t) { return name == t; });
}

absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& operand, CallArgs& args) {
  for (const NamedFilter& f : kFilters) {
    if (name == f.name) {
      // Only default, length/count, list, string, first, last, join, items and the selection filters
      // accept an undefined value; elsewhere it raises as Jinja2's Undefined does.
      static const std::set<std::string> kUndefinedOk = {"default", "d", "length", "count", "list", "string", "first", "last",
                                                         "join", "items", "map", "select", "reject", "selectattr",
                                                         "rejectattr", "unique", "sort", "reverse", "sum", "trim", "upper",
                                                         "lower", "capitalize", "title", "e", "escape", "safe", "indent",
                                                         "format", "replace", "int", "float"};
      if (operand.is_undefined() && kUndefinedOk.count(name) == 0) return UndefinedError(operand);
      return f.fn(operand, args);
    }
  }
  return TypeError(absl::StrCat("unknown filter '", name, "'"));
}

absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& v, CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_dict() && !v.dict().is_namespace;
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_function();
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    const std::string& s = v.as_string();
    const bool has_cased = Lower(s) != Upper(s);
    return has_cased && (name == "lower" ? Lower(s) == s : Upper(s) == s);
  }
  const Value* other = Arg(args, 0, "value");
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int() && !v.is_bool()) return TypeError(absl::StrCat("the ", name, " test needs an integer, not ", v.TypeName()));
    int64_t divisor = name == "divisibleby" ? 0 : 2;
    if (name == "divisibleby") {
      if (other == nullptr || !other->is_int() || other->as_int() == 0) return TypeError("divisibleby needs a non-zero integer");
      divisor = other->as_int();
      return v.as_int() % divisor == 0;
    }
    const bool even = v.as_int() % 2 == 0;
    return name == "even" ? even : !even;
  }
  if (other == nullptr) return TypeError(absl::StrCat("the ", name, " test needs an argument"));
  if (name == "in") return Contains(*other, v);
  if (name == "sameas") {
    if (v.is_none() || v.is_bool() || other->is_none() || other->is_bool()) return v.kind() == other->kind() && v.Equals(*other);
    return v.Equals(*other);
  }
  return CompareTest(name, v, *other);
}

absl::Status UndefinedError(const Value& undefined) {
  return absl::InvalidArgumentError(undefined.undefined_hint().empty() ? "undefined value" : undefined.undefined_hint());
}

namespace {

std::string ObjectName(const Value& v) {
  if (v.is_none()) return "None";
  return absl::StrCat(v.TypeName(), " object");
}

absl::StatusOr<Value> StringMethod(const std::string& text, const std::string& name) {
  auto method = [&](Function fn) { return MakeMethod(name, std::move(fn)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return method([text, left, right](CallArgs& a) -> absl::StatusOr<Value> {
      return Value::String(Strip(text, Arg(a, 0, "chars"), left, right));
    });
  }
  if (name == "split") {
    return method([text](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* sep = Arg(a, 0, "sep");
      if (sep != nullptr && !sep->is_none() && (!sep->is_string() || sep->as_string().empty())) {
        return TypeError("split: the separator must be a non-empty string");
      }
      ARACH_ASSIGN_OR_RETURN(int64_t maxsplit, ArgInt(a, 1, "maxsplit", -1));
      return Value::List(Split(text, sep, maxsplit));
    });
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
  if (name == "count" || name == "find") {
    const bool count = name == "count";
    return method([text, count](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(std::string sub, ArgString(a, 0, "sub"));
      if (!count) {
        const size_t at = text.find(sub);
        return Value::Int(at == std::string::npos ? -1 : static_cast<int64_t>(CodePoints(text.substr(0, at)).size()));
      }
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
  return Value::Undefined(absl::StrCat("'str object' has no attribute '", name, "'"));
}

absl::StatusOr<Value> DictMethod(const Value& dict, const std::string& name) {
  auto method = [&](Function fn) { return MakeMethod(name, std::move(fn)); };
  if (name == "get") {
    return method([dict](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* key = Arg(a, 0, "key");
      const Value* fallback = Arg(a, 1, "default");
      if (key == nullptr) return TypeError("get needs a key");
      const Value* found = key->is_string() ? dict.dict().Find(key->as_string()) : nullptr;
      if (found != nullptr) return *found;
      return fallback != nullptr ? *fallback : Value::None();
    });
  }
  if (name == "items") return method([dict](CallArgs&) -> absl::StatusOr<Value> { return Value::List(DictItems(dict.dict())); });
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return method([dict, keys](CallArgs&) -> absl::StatusOr<Value> {
      std::vector<Value> out;
      for (const auto& [k, v] : dict.dict().items) out.push_back(keys ? Value::String(k) : v);
      return Value::List(std::move(out));
    });
  }
  return Value::Undefined();
}

}  // namespace

absl::StatusOr<Value> GetAttribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_string()) return StringMethod(object.as_string(), name);
  if (object.is_dict()) {
    if (!object.dict().is_namespace) {
      ARACH_ASSIGN_OR_RETURN(Value method, DictMethod(object, name));
      if (!method.is_undefined()) return method;
    }
    if (const Value* found = object.dict().Find(name); found != nullptr) return *found;
  }
  return Value::Undefined(absl::StrCat("'", ObjectName(object), "' has no attribute '", name, "'"));
}

absl::StatusOr<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_dict() && key.is_string()) {
    if (const Value* found = object.dict().Find(key.as_string()); found != nullptr) return *found;
    return GetAttribute(object, key.as_string());
  }
  if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    const std::u32string cps = object.is_string() ? CodePoints(object.as_string()) : std::u32string();
    const int64_t size = object.is_list() ? static_cast<int64_t>(object.list().size()) : static_cast<int64_t>(cps.size());
    int64_t index = key.as_int();
    if (index < 0) index += size;
    if (index < 0 || index >= size) return Value::Undefined(absl::StrCat("'", ObjectName(object), "' has no element ", key.as_int()));
    if (object.is_list()) return object.list()[static_cast<size_t>(index)];
    return Value::String(Utf8(std::u32string(1, cps[static_cast<size_t>(index)])));
  }
  if (key.is_string()) return GetAttribute(object, key.as_string());
  return Value::Undefined(absl::StrCat("'", ObjectName(object), "' has no element ", key.Repr()));
}

absl::StatusOr<Value> GetSlice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (object.is_undefined()) return UndefinedError(object);
  if (!object.is_list() && !object.is_string()) return TypeError(absl::StrCat("'", object.TypeName(), "' object is not subscriptable"));
  const std::u32string cps = object.is_string() ? CodePoints(object.as_string()) : std::u32string();
  const int64_t size = object.is_list() ? static_cast<int64_t>(object.list().size()) : static_cast<int64_t>(cps.size());
  auto integer = [](const Value& v, const char* what) -> absl::StatusOr<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (!v.is_int() && !v.is_bool()) return TypeError(absl::StrCat("slice ", what, " must be an integer"));
    return std::optional<int64_t>(v.as_int());
  };
  ARACH_ASSIGN_OR_RETURN(std::optional<int64_t> start, integer(start_v, "start"));
  ARACH_ASSIGN_OR_RETURN(std::optional<int64_t> stop, integer(stop_v, "stop"));
  ARACH_ASSIGN_OR_RETURN(std::optional<int64_t> step_opt, integer(step_v, "step"));
  const int64_t step = step_opt.value_or(1);
  if (step == 0) return TypeError("slice step cannot be zero");
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + size : *v;
    if (step > 0) return std::clamp<int64_t>(x, 0, size);
    return std::clamp<int64_t>(x, -1, size - 1);
  };
  const int64_t begin = clamp(start, step > 0 ? 0 : size - 1);
  const int64_t end = clamp(stop, step > 0 ? size : -1);
  std::vector<Value> items;
  std::u32string text;
  for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) {
    if (object.is_list()) {
      items.push_back(object.list()[static_cast<size_t>(i)]);
    } else {
      text += cps[static_cast<size_t>(i)];
    }
  }
  return object.is_list() ? Value::List(std::move(items)) : Value::String(Utf8(text));
}

absl::StatusOr<std::vector<Value>> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>{};
    case Value::Kind::kList: return value.list();
    case Value::Kind::kString: {
      std::vector<Value> out;
      for (char32_t c : CodePoints(value.as_string())) out.push_back(Value::String(Utf8(std::u32string(1, c))));
      return out;
    }
    case Value::Kind::kDict: {
      std::vector<Value> out;
      for (const auto& [key, v] : value.dict().items) out.push_back(Value::String(key));
      return out;
    }
    default: return TypeError(absl::StrCat("'", value.TypeName(), "' object is not iterable"));
  }
}

absl::StatusOr<bool> Contains(const Value& haystack, const Value& needle) {
  if (haystack.is_undefined()) return UndefinedError(haystack);
  if (haystack.is_string()) {
    if (!needle.is_string()) return TypeError(absl::StrCat("'in <string>' requires string as left operand, not ", needle.TypeName()));
    return haystack.as_string().find(needle.as_string()) != std::string::npos;
  }
  if (haystack.is_list()) {
    return std::any_of(haystack.list().begin(), haystack.list().end(), [&](const Value& v) { return v.Equals(needle); });
  }
  if (haystack.is_dict()) return needle.is_string() && haystack.dict().Find(needle.as_string()) != nullptr;
  return TypeError(absl::StrCat("argument of type '", haystack.TypeName(), "' is not iterable"));
}

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

absl::StatusOr<Value> Repeat(const Value& sequence, int64_t times) {
  if (times <= 0) return sequence.is_string() ? Value::String("") : Value::List({});
  if (sequence.is_string()) {
    if (sequence.as_string().size() * static_cast<size_t>(times) > kMaxSequence) return TypeError("a repeated string is too long");
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value::String(out);
  }
  if (sequence.list().size() * static_cast<size_t>(times) > kMaxSequence) return TypeError("a repeated list is too long");
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.list().begin(), sequence.list().end());
  return Value::List(std::move(out));
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
    if (lhs.is_list() && rhs.is_list()) {
      std::vector<Value> out = lhs.list();
      out.insert(out.end(), rhs.list().begin(), rhs.list().end());
      return Value::List(std::move(out));
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

Dict BuiltinGlobals() {
  Dict globals;
  globals.Set("range", Value::MakeFunction("range", [](CallArgs& a) -> absl::StatusOr<Value> {
    std::vector<int64_t> bounds;
    for (const Value& v : a.positional) {
      if (!v.is_int() && !v.is_bool()) return TypeError(absl::StrCat("range: '", v.TypeName(), "' object cannot be interpreted as an integer"));
      bounds.push_back(v.as_int());
    }
    if (bounds.empty() || bounds.size() > 3) return TypeError("range expects 1 to 3 integers");
    const int64_t start = bounds.size() == 1 ? 0 : bounds[0];
    const int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
    const int64_t step = bounds.size() == 3 ? bounds[2] : 1;
    if (step == 0) return TypeError("range() arg 3 must not be zero");
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= kMaxSequence) return TypeError("range is too long");
      out.push_back(Value::Int(i));
    }
    return Value::List(std::move(out));
  }));
  globals.Set("namespace", Value::MakeFunction("namespace", [](CallArgs& a) -> absl::StatusOr<Value> {
    Dict ns;
    ns.is_namespace = true;
    for (const Value& v : a.positional) {
      if (!v.is_dict()) return TypeError("namespace() takes keyword arguments or a mapping");
      for (const auto& [key, item] : v.dict().items) ns.Set(key, item);
    }
    for (auto& [key, value] : a.keyword) ns.Set(key, value);
    return Value::MakeDict(std::move(ns));
  }));
  globals.Set("dict", Value::MakeFunction("dict", [](CallArgs& a) -> absl::StatusOr<Value> {
    Dict d;
    for (const Value& v : a.positional) {
      if (!v.is_dict()) return TypeError("dict() takes keyword arguments or a mapping");
      for (const auto& [key, item] : v.dict().items) d.Set(key, item);
    }
    for (auto& [key, value] : a.keyword) d.Set(key, value);
    return Value::MakeDict(std::move(d));
  }));
  return globals;
}

}  // namespace arach::jinja
