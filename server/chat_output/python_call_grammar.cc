#include "server/chat_output/python_call_grammar.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace arach::server {
namespace {

using json = nlohmann::json;

// `text` between `quote`s, with the quote, backslash, newline, carriage return and tab escaped: an EBNF string
// literal of the grammar (quote '"') or a Python string literal (quote '\'').
std::string Quoted(absl::string_view text, char quote) {
  std::string out(1, quote);
  for (const char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == quote) out += '\\';
        out += c;
    }
  }
  return out + quote;
}
std::string EbnfString(absl::string_view text) { return Quoted(text, '"'); }
std::string PythonString(absl::string_view value) { return Quoted(value, '\''); }

// Literal rules every tool's arguments share. Escapes are those PythonReader reads alike in both quotes.
constexpr absl::string_view kLiteralRules = R"(py_string ::= "'" py_char_single* "'" | "\"" py_char_double* "\""
py_char_single ::= [^'\\\r\n] | "\\" [\\'"nrt]
py_char_double ::= [^"\\\r\n] | "\\" [\\'"nrt]
py_int ::= "-"? ("0" | [1-9] [0-9]*)
py_number ::= py_int ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
py_bool ::= "True" | "False"
py_list ::= "[" "]" | "[" py_value (", " py_value)* "]"
py_dict ::= "{" "}" | "{" py_string ": " py_value (", " py_string ": " py_value)* "}"
py_value ::= py_string | py_number | py_bool | "None" | py_list | py_dict
)";

// Schemas nested deeper than this (items of items ..., anyOf in anyOf ...) take any literal.
constexpr int kMaxSchemaDepth = 8;
// Integer bounds beyond this magnitude are not enforced (the digit patterns stay within 64 bits).
constexpr int64_t kMaxBound = 1'000'000'000'000'000'000;

std::string Alternatives(const std::vector<std::string>& alternatives) {
  return alternatives.size() == 1 ? alternatives[0] : absl::StrCat("(", absl::StrJoin(alternatives, " | "), ")");
}

// The decimal numbers of `a` to `b`, digit strings of one length (a <= b), as digit patterns after `prefix`.
void DigitPatterns(const std::string& prefix, const std::string& a, const std::string& b, std::vector<std::string>& out) {
  if (a.empty()) {
    out.push_back(EbnfString(prefix));
    return;
  }
  if (a[0] == b[0]) {
    DigitPatterns(prefix + a[0], a.substr(1), b.substr(1), out);
    return;
  }
  const size_t rest = a.size() - 1;
  const auto pattern = [&](char low, char high) {  // prefix, one digit in [low, high], then any `rest` digits
    std::string p = prefix.empty() ? "" : EbnfString(prefix) + " ";
    absl::StrAppend(&p, low == high ? EbnfString(std::string(1, low)) : absl::StrCat("[", std::string(1, low), "-", std::string(1, high), "]"));
    if (rest > 0) absl::StrAppend(&p, " [0-9]{", rest, "}");
    out.push_back(p);
  };
  const bool a_lowest = a.find_first_not_of('0', 1) == std::string::npos;   // a's other digits are all 0
  const bool b_highest = b.find_first_not_of('9', 1) == std::string::npos;  // b's other digits are all 9
  char middle_low = a[0], middle_high = b[0];
  if (!a_lowest) {
    DigitPatterns(prefix + a[0], a.substr(1), std::string(rest, '9'), out);
    ++middle_low;
  }
  if (!b_highest) --middle_high;
  if (middle_low <= middle_high) pattern(middle_low, middle_high);
  if (!b_highest) DigitPatterns(prefix + b[0], std::string(rest, '0'), b.substr(1), out);
}

// The magnitudes `from` to `to` (none: unbounded) as digit patterns.
void MagnitudePatterns(uint64_t from, std::optional<uint64_t> to, std::vector<std::string>& out) {
  const std::string low = std::to_string(from);
  const std::string high = to ? std::to_string(*to) : "";
  for (size_t digits = low.size(); digits <= (to ? high.size() : low.size()); ++digits) {
    std::string first = low;
    if (digits > low.size()) {  // 10...0
      first.assign(digits, '0');
      first[0] = '1';
    }
    const std::string last = to && digits == high.size() ? high : std::string(digits, '9');
    DigitPatterns("", first, last, out);
  }
  if (!to) out.push_back(absl::StrCat("[1-9] [0-9]{", low.size(), ",}"));  // any number with more digits
}

// An integer within the schema's minimum / maximum (exclusive ones too), when it sets them.
std::string IntegerRule(const json& schema) {
  std::optional<int64_t> low, high;
  const auto bound = [&](const char* key, bool is_low, bool exclusive) {
    const auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return;
    const double value = it->get<double>();
    if (!(std::abs(value) <= static_cast<double>(kMaxBound))) return;
    int64_t b = static_cast<int64_t>(is_low ? std::ceil(value) : std::floor(value));
    if (exclusive && static_cast<double>(b) == value) b += is_low ? 1 : -1;
    if (is_low) low = low ? std::max(*low, b) : b;
    if (!is_low) high = high ? std::min(*high, b) : b;
  };
  bound("minimum", true, false);
  bound("exclusiveMinimum", true, true);
  bound("maximum", false, false);
  bound("exclusiveMaximum", false, true);
  if ((!low && !high) || (low && high && *low > *high)) return "py_int";
  std::vector<std::string> patterns;
  if (!low || *low < 0) {  // negatives: magnitudes from -high (or 1) to -low (or unbounded)
    std::vector<std::string> magnitudes;
    MagnitudePatterns(high && *high < 0 ? static_cast<uint64_t>(-*high) : 1,
                      low ? std::optional<uint64_t>(static_cast<uint64_t>(-*low)) : std::nullopt, magnitudes);
    for (const std::string& m : magnitudes) patterns.push_back(absl::StrCat("\"-\" ", m));
  }
  if (!high || *high >= 0) {
    MagnitudePatterns(low && *low > 0 ? static_cast<uint64_t>(*low) : 0,
                      high ? std::optional<uint64_t>(static_cast<uint64_t>(*high)) : std::nullopt, patterns);
  }
  return Alternatives(patterns);
}

// A string of the schema's minLength / maxLength characters, when it sets them.
std::string StringRule(const json& schema) {
  const auto length = [&](const char* key) -> std::optional<uint64_t> {
    const auto it = schema.find(key);
    if (it == schema.end() || !it->is_number_unsigned()) return std::nullopt;
    return it->get<uint64_t>();
  };
  const std::optional<uint64_t> min = length("minLength"), max = length("maxLength");
  if (!min && !max) return "py_string";
  const std::string count = absl::StrCat("{", min.value_or(0), ",", max ? std::to_string(*max) : "", "}");
  return absl::StrCat("(\"'\" py_char_single", count, " \"'\" | \"\\\"\" py_char_double", count, " \"\\\"\")");
}

// `value` (a JSON scalar) as a Python literal; nullopt for arrays and objects.
std::optional<std::string> PythonScalar(const json& value) {
  if (value.is_string()) return PythonString(value.get<std::string>());
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_number()) return value.dump();
  return std::nullopt;
}

// The value rule of a property's schema: its enum or const, its types (a union of them), or any of its anyOf /
// oneOf; any literal for what it does not say or the grammar does not hold (an object's own properties).
std::string ValueRule(const json& schema, int depth = 0) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return "py_value";
  json values = schema.contains("const") ? json::array({schema["const"]}) : schema.value("enum", json());
  if (values.is_array() && !values.empty()) {
    std::vector<std::string> literals;
    for (const json& value : values) {
      const std::optional<std::string> literal = PythonScalar(value);
      if (!literal) return "py_value";
      literals.push_back(EbnfString(*literal));
    }
    return Alternatives(literals);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const auto options = schema.find(key);
    if (options == schema.end() || !options->is_array() || options->empty()) continue;
    std::vector<std::string> rules;
    for (const json& option : *options) rules.push_back(ValueRule(option, depth + 1));
    return Alternatives(rules);
  }
  const auto type = schema.find("type");
  if (type == schema.end()) return "py_value";
  std::vector<std::string> rules;
  for (const json& name : type->is_array() ? *type : json::array({*type})) {
    if (name == "string") {
      rules.push_back(StringRule(schema));
    } else if (name == "integer") {
      rules.push_back(IntegerRule(schema));
    } else if (name == "number") {
      rules.push_back("py_number");
    } else if (name == "boolean") {
      rules.push_back("py_bool");
    } else if (name == "null") {
      rules.push_back("\"None\"");
    } else if (name == "array") {
      const auto items = schema.find("items");
      const std::string item = items == schema.end() ? "py_value" : ValueRule(*items, depth + 1);
      rules.push_back(absl::StrCat("(\"[\" \"]\" | \"[\" ", item, " (\", \" ", item, ")* \"]\")"));
    } else if (name == "object") {
      rules.push_back("py_dict");
    } else {
      return "py_value";
    }
  }
  if (rules.empty()) return "py_value";
  return Alternatives(rules);
}

// The rule `args` of a tool's keyword arguments: its properties in the order of their names (the schema's JSON object
// keeps them so), each `name=value`, the optional ones may be left out. `first_<p>`: properties from p on, none
// written yet; `rest_<p>`: from p on, after one.
std::string ArgumentRules(const ToolSpec& tool) {
  const json empty = json::object();
  const auto properties_it = tool.parameters.find("properties");
  const json& properties = properties_it != tool.parameters.end() && properties_it->is_object() ? *properties_it : empty;
  std::set<std::string> required;
  if (const auto list = tool.parameters.find("required"); list != tool.parameters.end() && list->is_array()) {
    for (const json& name : *list) {
      if (name.is_string()) required.insert(name.get<std::string>());
    }
  }
  if (properties.empty()) return "args ::= \"\" | py_keyword (\", \" py_keyword)*\n";  // no schema of its arguments: any keywords
  std::vector<std::pair<std::string, std::string>> items;  // (name, value rule)
  for (const auto& [name, schema] : properties.items()) items.emplace_back(name, ValueRule(schema));
  std::string rules = "args ::= first_0\n";
  for (size_t p = 0; p < items.size(); ++p) {
    const std::string keyword = absl::StrCat(EbnfString(items[p].first + "="), " ", items[p].second);
    const bool optional = required.count(items[p].first) == 0;
    absl::StrAppend(&rules, "first_", p, " ::= ", keyword, " rest_", p + 1, optional ? absl::StrCat(" | first_", p + 1) : "", "\n");
    absl::StrAppend(&rules, "rest_", p, " ::= \", \" ", keyword, " rest_", p + 1, optional ? absl::StrCat(" | rest_", p + 1) : "", "\n");
  }
  absl::StrAppend(&rules, "first_", items.size(), " ::= \"\"\nrest_", items.size(), " ::= \"\"\n");
  return rules;
}

}  // namespace

std::string PythonArgumentsGrammar(const ToolSpec& tool) {
  return absl::StrCat("root ::= args\n", kLiteralRules, "py_keyword ::= [a-zA-Z_] [a-zA-Z0-9_]* \"=\" py_value\n", ArgumentRules(tool));
}

}  // namespace arach::server
