// The values a chat template computes with, with Python's semantics as Jinja2 gives them: truthiness,
// ==, ordering, str() and repr() (what {{ }} prints), and conversion from/to JSON (tojson matches Python's
// json.dumps(x, ensure_ascii=False), keys in insertion order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach::jinja {

class Value;

// How deep lists and dicts may nest: deeper JSON input is refused, and the recursive operations (==, <,
// repr, tojson) stop there, so that a namespace holding itself cannot exhaust the stack.
inline constexpr int kMaxNesting = 128;

// Arguments of a call: positional, then keyword (name=value) in the order given.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<absl::StatusOr<Value>(CallArgs&)>;

// An ordered mapping with string keys (JSON objects, dict literals, namespace() objects).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // attributes may be assigned ({% set ns.x = ... %})

  const Value* Find(const std::string& key) const;
  void Set(const std::string& key, Value value);  // replaces in place or appends
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // undefined
  // `hint` says why, for the error a use of it raises ("'x' is undefined", "'dict object' has no attribute 'y'").
  static Value Undefined(std::string hint = "") {
    Value v;
    v.string_ = std::move(hint);
    return v;
  }
  static Value None() { return Value(Kind::kNone); }
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.int_ = b ? 1 : 0;
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.int_ = i;
    return v;
  }
  static Value Float(double f) {
    Value v(Kind::kFloat);
    v.float_ = f;
    return v;
  }
  static Value String(std::string s) {
    Value v(Kind::kString);
    v.string_ = std::move(s);
    return v;
  }
  static Value List(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);  // a list that shows as (a, b)
  // A tuple whose items are also its attributes by these names (Python's namedtuple, shown as a plain tuple as
  // Jinja2's groupby results are).
  static Value NamedTuple(std::vector<std::string> fields, std::vector<Value> items);
  static Value MakeDict(Dict dict);
  static Value MakeFunction(std::string name, Function fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }           // kInt / kBool
  double as_double() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }  // numbers
  const std::string& as_string() const { return string_; }
  // Why a value is undefined (see Undefined()).
  const std::string& undefined_hint() const { return string_; }
  bool is_tuple() const { return tuple_; }
  // A named tuple's field names (NamedTuple); null for any other value.
  const std::vector<std::string>* tuple_fields() const { return tuple_fields_.get(); }
  const std::vector<Value>& list() const { return *list_; }
  const Dict& dict() const { return *dict_; }
  Dict& mutable_dict() const { return *dict_; }  // namespaces only
  // A namespace object's own methods hold it weakly (it holds them: a strong reference would be a cycle).
  std::weak_ptr<Dict> weak_dict() const { return dict_; }
  const Function& function() const { return *function_; }
  const std::string& function_name() const { return string_; }

  // Python truthiness (undefined and none are false).
  bool Truthy() const;
  // Python ==. Values nested deeper than kMaxNesting (a namespace that holds itself) compare unequal.
  bool Equals(const Value& other, int depth = 0) const;
  // Python <, for numbers, strings and lists; an error names both types otherwise.
  absl::StatusOr<bool> Less(const Value& other, int depth = 0) const;
  // str(): what {{ }} prints (undefined prints nothing).
  std::string Str() const;
  // repr(): how values show inside lists and dicts ("..." below kMaxNesting levels, as Python shows cycles).
  std::string Repr(int depth = 0) const;
  // The Python type name ("str", "int", "list", "dict", "NoneType", "undefined", ...).
  std::string TypeName() const;

  // INVALID_ARGUMENT when `json` nests deeper than kMaxNesting.
  static absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json, int depth = 0);

 private:
  explicit Value(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::string string_;  // kString; kFunction: its name; kUndefined: the name looked up
  std::shared_ptr<std::vector<Value>> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> function_;
  std::shared_ptr<const std::vector<std::string>> tuple_fields_;  // NamedTuple
};

// Python's repr() of a float ("1.0", "0.1", "1e-05", "1e+16", "inf", "nan").
std::string FloatRepr(double value);

struct JsonOptions {
  bool ensure_ascii = false;          // escape every character outside ' '..'~' as \uXXXX (surrogate pairs past U+FFFF)
  std::optional<std::string> indent;  // None: one line; else what one level of nesting indents by
  bool sort_keys = false;
  std::optional<std::string> item_separator;  // defaults: ", " on one line, "," with indent
  std::string key_separator = ": ";
};
// json.dumps(value, ...) as Python writes it; undefined and functions are errors.
absl::StatusOr<std::string> ToJson(const Value& value, const JsonOptions& options = {});

// dict.items(): a (key, value) tuple per entry, in insertion order.
std::vector<Value> DictItems(const Dict& dict);

}  // namespace arach::jinja
