// Filters (x | trim) and tests (x is string) of the chat-template engine: ApplyFilter, ApplyTest.
#include "engine/chat/jinja_builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/chat/jinja_layout_filters.h"
#include "engine/chat/jinja_web_filters.h"
#include "engine/chat/jinja_text.h"
#include "engine/core/markup_escape.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

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

// Python's sorted() of `entries` by `key(entry)` (a Value), stable; the first comparison Python cannot make is the error.
template <typename Entry, typename KeyOf>
absl::Status StableSortByKey(std::vector<Entry>& entries, bool reverse, KeyOf key) {
  absl::Status error;
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    absl::StatusOr<bool> less = reverse ? key(b).Less(key(a)) : key(a).Less(key(b));
    if (!less.ok()) {
      error = less.status();
      return false;
    }
    return *less;
  });
  return error;
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
  ARACH_RETURN_IF_ERROR(StableSortByKey(keyed, reverse, [](const std::pair<Value, Value>& entry) -> const Value& { return entry.first; }));
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
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

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False), its
// parameters in that order (not Jinja2's own tojson(indent)).
absl::StatusOr<Value> FilterToJson(const Value& v, CallArgs& a) {
  constexpr int64_t kMaxIndent = 64;  // keeps a deep value's text bounded
  JsonOptions options;
  options.ensure_ascii = ArgBool(a, 0, "ensure_ascii", false);
  if (const Value* indent = Arg(a, 1, "indent"); indent != nullptr && !indent->is_none()) {
    if (indent->is_string()) {
      if (static_cast<int64_t>(indent->as_string().size()) > kMaxIndent) return TypeError("tojson: an indent over 64 characters is not supported");
      options.indent = indent->as_string();
    } else if (indent->is_int() || indent->is_bool()) {
      if (indent->as_int() > kMaxIndent) return TypeError("tojson: an indent over 64 is not supported");
      options.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent->as_int(), 0)), ' ');
    } else {
      return TypeError(absl::StrCat("tojson: indent must be an integer or a string, not ", indent->TypeName()));
    }
  }
  if (const Value* separators = Arg(a, 2, "separators"); separators != nullptr && !separators->is_none()) {
    if (!separators->is_list() || separators->list().size() != 2 || !separators->list()[0].is_string() ||
        !separators->list()[1].is_string()) {
      return TypeError("tojson: separators must be two strings (item separator, key separator)");
    }
    options.item_separator = separators->list()[0].as_string();
    options.key_separator = separators->list()[1].as_string();
  }
  options.sort_keys = ArgBool(a, 3, "sort_keys", false);
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

// min / max: the first smallest or largest item (strings compared lower-cased unless case sensitive); undefined
// when there are none.
absl::StatusOr<Value> Extreme(const Value& v, CallArgs& a, bool largest) {
  const Value* attribute = Arg(a, 1, "attribute");
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                         SortedValues(std::move(items), largest, ArgBool(a, 0, "case_sensitive", false),
                                      attribute != nullptr && !attribute->is_none() ? attribute->Str() : ""));
  return sorted.front();
}
absl::StatusOr<Value> FilterMin(const Value& v, CallArgs& a) { return Extreme(v, a, false); }
absl::StatusOr<Value> FilterMax(const Value& v, CallArgs& a) { return Extreme(v, a, true); }

// round(precision=0, method='common'): Python's round() (ties to even on the exact binary value, an int stays an
// int), or 'floor' / 'ceil' at that many decimals (a float).
absl::StatusOr<Value> FilterRound(const Value& v, CallArgs& a) {
  if (!v.is_number()) return TypeError(absl::StrCat("round: expected a number, got ", v.TypeName()));
  ARACH_ASSIGN_OR_RETURN(int64_t precision, ArgInt(a, 0, "precision", 0));
  const Value* method_arg = Arg(a, 1, "method");
  const std::string method = method_arg != nullptr ? method_arg->Str() : "common";
  if (method != "common" && method != "floor" && method != "ceil") return TypeError("round: method must be common, ceil or floor");
  if (precision < 0 || precision > 15) return TypeError("round: a precision outside 0..15 is not supported");
  const double x = v.as_double();
  if (method == "common") {
    if (!v.is_float()) return Value::Int(v.as_int());
    if (!std::isfinite(x)) return v;
    // printf rounds the exact binary value, ties to even, as Python's round() does.
    return Value::Float(std::strtod(absl::StrFormat("%.*f", static_cast<int>(precision), x).c_str(), nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  return Value::Float((method == "floor" ? std::floor(x * scale) : std::ceil(x * scale)) / scale);
}

absl::StatusOr<Value> FilterItems(const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::List({});
  if (!v.is_dict()) return TypeError(absl::StrCat("items: expected a mapping, got ", v.TypeName()));
  return Value::List(DictItems(v.dict()));
}

// items | groupby(attribute, default=none, case_sensitive=false): the items sorted by the attribute and grouped
// where it is equal (strings compared lower-cased unless case sensitive), each group a (grouper, list) named tuple
// whose grouper is the attribute of its first item as written; `default` stands for an item's missing attribute.
absl::StatusOr<Value> FilterGroupBy(const Value& v, CallArgs& a) {
  const Value* attribute = Arg(a, 0, "attribute");
  if (attribute == nullptr) return TypeError("groupby needs an attribute");
  const Value* fallback = Arg(a, 1, "default");
  const bool case_sensitive = ArgBool(a, 2, "case_sensitive", false);
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  struct Keyed {
    Value key;      // as the sort and the grouping compare it
    Value grouper;  // as written
    Value item;
  };
  std::vector<Keyed> keyed;
  for (Value& item : items) {
    ARACH_ASSIGN_OR_RETURN(Value grouper, AttributePath(item, attribute->Str()));
    if (grouper.is_undefined() && fallback != nullptr) grouper = *fallback;
    keyed.push_back({SortKey(grouper, case_sensitive), std::move(grouper), std::move(item)});
  }
  ARACH_RETURN_IF_ERROR(StableSortByKey(keyed, /*reverse=*/false, [](const Keyed& entry) -> const Value& { return entry.key; }));
  std::vector<Value> groups;
  for (size_t begin = 0; begin < keyed.size();) {
    size_t end = begin + 1;
    while (end < keyed.size() && keyed[end].key.Equals(keyed[begin].key)) ++end;
    std::vector<Value> members;
    for (size_t i = begin; i < end; ++i) members.push_back(std::move(keyed[i].item));
    groups.push_back(Value::NamedTuple({"grouper", "list"}, {keyed[begin].grouper, Value::List(std::move(members))}));
    begin = end;
  }
  return Value::List(std::move(groups));
}

// obj | attr(name): getattr(obj, name) (a dict's items are not its attributes; undefined where there is none).
absl::StatusOr<Value> FilterAttr(const Value& v, CallArgs& a) {
  const Value* name = Arg(a, 0, "name");
  if (name == nullptr) return TypeError("attr needs a name");
  return GetPythonAttribute(v, name->Str());
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
  if (width != nullptr && width->is_int()) {
    if (width->as_int() > 256) return TypeError("indent: a width over 256 is not supported");
    pad = std::string(static_cast<size_t>(std::max<int64_t>(width->as_int(), 0)), ' ');
  }
  return Value::String(Indent(v.Str(), pad, ArgBool(a, 1, "first", false), ArgBool(a, 2, "blank", false)));
}

absl::StatusOr<Value> FilterSafe(const Value& v, CallArgs&) { return v; }
absl::StatusOr<Value> FilterEscape(const Value& v, CallArgs&) { return Value::String(EscapeMarkup(v.Str())); }

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
    {"e", FilterEscape},          {"escape", FilterEscape},       {"min", FilterMin},
    {"max", FilterMax},           {"round", FilterRound},         {"batch", FilterBatch},
    {"slice", FilterSlice},       {"truncate", FilterTruncate},   {"center", FilterCenter},
    {"wordcount", FilterWordCount}, {"urlencode", FilterUrlEncode}, {"xmlattr", FilterXmlAttr},
    {"groupby", FilterGroupBy},   {"attr", FilterAttr},
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
      // Only these accept an undefined value (as an empty string or sequence); elsewhere it raises as Jinja2's
      // Undefined does.
      static const std::set<std::string> kUndefinedOk = {"default", "d", "length", "count", "list", "string", "first", "last",
                                                         "join", "items", "map", "select", "reject", "selectattr",
                                                         "rejectattr", "unique", "sort", "reverse", "sum", "trim", "upper",
                                                         "lower", "capitalize", "title", "e", "escape", "safe", "indent",
                                                         "format", "replace", "int", "float", "batch", "slice",
                                                         "truncate", "wordcount", "urlencode"};
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

}  // namespace arach::jinja
