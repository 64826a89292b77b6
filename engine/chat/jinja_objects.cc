// What templates do with objects: attributes and items with Jinja2's fallbacks, slices, iteration,
// membership, and the methods of dicts and lists (d.get(k), l.index(x); strings' are in jinja_str_methods.cc).
#include "engine/chat/jinja_builtins.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/chat/jinja_text.h"
#include "engine/core/status.h"

namespace arach::jinja {

absl::Status UndefinedError(const Value& undefined) {
  return absl::InvalidArgumentError(undefined.undefined_hint().empty() ? "undefined value" : undefined.undefined_hint());
}

namespace {

Value MakeMethod(const std::string& name, Function fn) { return Value::MakeFunction(name, std::move(fn)); }


std::string ObjectName(const Value& v) {
  if (v.is_none()) return "None";
  return absl::StrCat(v.TypeName(), " object");
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
  if (name == "copy") return method([dict](CallArgs&) -> absl::StatusOr<Value> { return Value::MakeDict(dict.dict()); });
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

// The methods of lists and tuples that change nothing (copy, index, count; the sandbox refuses the others).
Value SequenceMethod(const Value& sequence, const std::string& name) {
  auto method = [&](Function fn) { return MakeMethod(name, std::move(fn)); };
  if (name == "copy" && !sequence.is_tuple()) return method([sequence](CallArgs&) -> absl::StatusOr<Value> { return Value::List(sequence.list()); });
  if (name == "index" || name == "count") {
    const bool index = name == "index";
    return method([sequence, index](CallArgs& a) -> absl::StatusOr<Value> {
      const Value* needle = Arg(a, 0, "value");
      if (needle == nullptr) return TypeError(absl::StrCat(index ? "index" : "count", " needs a value"));
      int64_t n = 0;
      for (size_t i = 0; i < sequence.list().size(); ++i) {
        if (!sequence.list()[i].Equals(*needle)) continue;
        if (index) return Value::Int(static_cast<int64_t>(i));
        ++n;
      }
      if (index) return TypeError(absl::StrCat(needle->Repr(), " is not in ", sequence.TypeName()));
      return Value::Int(n);
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
  if (object.is_list()) {
    if (const std::vector<std::string>* fields = object.tuple_fields(); fields != nullptr) {
      for (size_t i = 0; i < fields->size() && i < object.list().size(); ++i) {
        if ((*fields)[i] == name) return object.list()[i];
      }
    }
    Value method = SequenceMethod(object, name);
    if (!method.is_undefined()) return method;
  }
  return Value::Undefined(absl::StrCat("'", ObjectName(object), "' has no attribute '", name, "'"));
}

absl::StatusOr<Value> GetPythonAttribute(const Value& object, const std::string& name) {
  if (object.is_dict() && !object.dict().is_namespace) {
    ARACH_ASSIGN_OR_RETURN(Value method, DictMethod(object, name));
    if (!method.is_undefined()) return method;
    return Value::Undefined(absl::StrCat("'", ObjectName(object), "' has no attribute '", name, "'"));
  }
  return GetAttribute(object, name);
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
  // Jinja2's Undefined iterates as empty, so nothing is in it (`name not in spec.required` where a schema has none).
  if (haystack.is_undefined()) return false;
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

}  // namespace arach::jinja
