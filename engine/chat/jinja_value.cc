#include "engine/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_text.h"

namespace arach::jinja {

const Value* Dict::Find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::List(std::vector<Value> items) {
  Value v(Kind::kList);
  v.list_ = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}

Value Value::Tuple(std::vector<Value> items) {
  Value v = List(std::move(items));
  v.tuple_ = true;
  return v;
}

Value Value::NamedTuple(std::vector<std::string> fields, std::vector<Value> items) {
  Value v = Tuple(std::move(items));
  v.tuple_fields_ = std::make_shared<const std::vector<std::string>>(std::move(fields));
  return v;
}

Value Value::MakeDict(Dict dict) {
  Value v(Kind::kDict);
  v.dict_ = std::make_shared<Dict>(std::move(dict));
  return v;
}

Value Value::MakeFunction(std::string name, Function fn) {
  Value v(Kind::kFunction);
  v.string_ = std::move(name);
  v.function_ = std::make_shared<Function>(std::move(fn));
  return v;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0.0;
    case Kind::kString: return !string_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

bool Value::Equals(const Value& other, int depth) const {
  if (depth > kMaxNesting) return false;
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return string_ == other.string_;
    case Kind::kList: {
      if (tuple_ != other.tuple_ || list_->size() != other.list_->size()) return false;  // (1, 2) != [1, 2]
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*other.list_)[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->items.size() != other.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* o = other.dict_->Find(k);
        if (o == nullptr || !v.Equals(*o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kFunction: return function_ == other.function_;
    default: return false;
  }
}

absl::StatusOr<bool> Value::Less(const Value& other, int depth) const {
  if (depth > kMaxNesting) return absl::InvalidArgumentError("the values compared nest too deeply");
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() < other.as_double();
    return int_ < other.int_;
  }
  if (is_string() && other.is_string()) return string_ < other.string_;  // UTF-8 order = code point order
  if (is_list() && other.is_list()) {
    const size_t n = std::min(list_->size(), other.list_->size());
    for (size_t i = 0; i < n; ++i) {
      const Value& a = (*list_)[i];
      const Value& b = (*other.list_)[i];
      if (a.Equals(b, depth + 1)) continue;
      return a.Less(b, depth + 1);
    }
    return list_->size() < other.list_->size();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'<' not supported between instances of '", TypeName(), "' and '", other.TypeName(), "'"));
}

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // The shortest digits that round-trip, then Python's layout: fixed for 1e-4 <= |x| < 1e16, else exponent.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string sci(buffer, result.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    out += absl::StrFormat("e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent < 0) {
    out = absl::StrCat("0.", std::string(static_cast<size_t>(-exponent - 1), '0'), digits);
  } else {
    const size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return negative ? "-" + out : out;
}

namespace {

// Python's repr() of a str: single quotes unless the text has ' and no ".
std::string StringRepr(const std::string& s) {
  const bool double_quotes = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(quote)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return string_;
    default: return Repr();
  }
}

std::string Value::Repr(int depth) const {
  if (depth > kMaxNesting && (kind_ == Kind::kList || kind_ == Kind::kDict)) return "...";
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return int_ ? "True" : "False";
    case Kind::kInt: return absl::StrCat(int_);
    case Kind::kFloat: return FloatRepr(float_);
    case Kind::kString: return StringRepr(string_);
    case Kind::kList: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) absl::StrAppend(&out, i ? ", " : "", (*list_)[i].Repr(depth + 1));
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = dict_->is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        absl::StrAppend(&out, i ? ", " : "", StringRepr(dict_->items[i].first), ": ", dict_->items[i].second.Repr(depth + 1));
      }
      return out + (dict_->is_namespace ? "}>" : "}");
    }
    case Kind::kFunction: return absl::StrCat("<function ", string_, ">");
  }
  return "";
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return tuple_ ? "tuple" : "list";
    case Kind::kDict: return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "";
}

absl::StatusOr<Value> Value::FromJson(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxNesting) return absl::InvalidArgumentError(absl::StrCat("the JSON nests deeper than ", kMaxNesting, " levels"));
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return None();
    case nlohmann::ordered_json::value_t::boolean: return Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? Float(static_cast<double>(u)) : Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& item : json) {
        absl::StatusOr<Value> v = FromJson(item, depth + 1);
        if (!v.ok()) return v.status();
        items.push_back(std::move(*v));
      }
      return List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [key, item] : json.items()) {
        absl::StatusOr<Value> v = FromJson(item, depth + 1);
        if (!v.ok()) return v.status();
        dict.items.emplace_back(key, std::move(*v));
      }
      return MakeDict(std::move(dict));
    }
    default: return Undefined();
  }
}

namespace {

// A JSON string as Python's json.dumps writes it: short escapes for " \ \n \r \t \b \f, \u00XX for the other control
// characters; with `ensure_ascii`, \uXXXX for everything outside ' '..'~' too (a surrogate pair past U+FFFF).
std::string JsonString(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  auto append = [&out, ensure_ascii](char32_t c) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f && c <= 0xffff)) {
          out += absl::StrFormat("\\u%04x", static_cast<uint32_t>(c));
        } else if (ensure_ascii && c > 0xffff) {
          const uint32_t v = static_cast<uint32_t>(c) - 0x10000;
          out += absl::StrFormat("\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        } else {
          out += static_cast<char>(c);  // a byte (ensure_ascii off: UTF-8 passes through as it is) or ASCII
        }
    }
  };
  if (ensure_ascii) {
    for (char32_t c : CodePoints(s)) append(c);  // characters, to escape every one past '~'
  } else {
    for (unsigned char c : s) append(c);
  }
  return out + "\"";
}

absl::Status WriteJson(const Value& v, const JsonOptions& o, int depth, std::string* out) {
  if (depth > kMaxNesting) return absl::InvalidArgumentError("Circular reference detected");
  const std::string item_separator = o.item_separator.value_or(o.indent ? "," : ", ");
  auto newline = [&](int level) {
    if (!o.indent) return;
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += *o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone: *out += "null"; return absl::OkStatus();
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return absl::OkStatus();
    case Value::Kind::kInt: absl::StrAppend(out, v.as_int()); return absl::OkStatus();
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      *out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : FloatRepr(f);
      return absl::OkStatus();
    }
    case Value::Kind::kString: *out += JsonString(v.as_string(), o.ensure_ascii); return absl::OkStatus();
    case Value::Kind::kList: {
      if (v.list().empty()) {
        *out += "[]";
        return absl::OkStatus();
      }
      *out += "[";
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i) *out += item_separator;
        newline(depth + 1);
        if (absl::Status s = WriteJson(v.list()[i], o, depth + 1, out); !s.ok()) return s;
      }
      newline(depth);
      *out += "]";
      return absl::OkStatus();
    }
    case Value::Kind::kDict: {
      if (v.dict().items.empty()) {
        *out += "{}";
        return absl::OkStatus();
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.dict().items) items.push_back(&item);
      if (o.sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      *out += "{";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += item_separator;
        newline(depth + 1);
        absl::StrAppend(out, JsonString(items[i]->first, o.ensure_ascii), o.key_separator);
        if (absl::Status s = WriteJson(items[i]->second, o, depth + 1, out); !s.ok()) return s;
      }
      newline(depth);
      *out += "}";
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("Object of type ", v.TypeName(), " is not JSON serializable"));
  }
}

}  // namespace

absl::StatusOr<std::string> ToJson(const Value& value, const JsonOptions& options) {
  std::string out;
  if (absl::Status s = WriteJson(value, options, 0, &out); !s.ok()) return s;
  return out;
}

std::vector<Value> DictItems(const Dict& dict) {
  std::vector<Value> out;
  for (const auto& [key, value] : dict.items) out.push_back(Value::Tuple({Value::String(key), value}));
  return out;
}

}  // namespace arach::jinja
