// The functions every template can call: range, namespace, joiner, cycler, dict.
#include "engine/chat/jinja_builtins.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_call_args.h"

namespace arach::jinja {

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
  globals.Set("joiner", Value::MakeFunction("joiner", [](CallArgs& a) -> absl::StatusOr<Value> {
    const Value* sep = Arg(a, 0, "sep");
    auto used = std::make_shared<bool>(false);
    return Value::MakeFunction("joiner", [separator = sep != nullptr ? sep->Str() : std::string(", "), used](CallArgs&) -> absl::StatusOr<Value> {
      if (!*used) {
        *used = true;
        return Value::String("");
      }
      return Value::String(separator);
    });
  }));
  // cycler(*items): next() gives the current item and moves on (back to the first after the last), reset() goes back
  // to the first; .current and .items read them.
  globals.Set("cycler", Value::MakeFunction("cycler", [](CallArgs& a) -> absl::StatusOr<Value> {
    if (a.positional.empty()) return TypeError("cycler: at least one item has to be provided");
    auto items = std::make_shared<const std::vector<Value>>(a.positional);
    auto position = std::make_shared<size_t>(0);
    Dict object;
    object.is_namespace = true;  // attributes only
    object.Set("items", Value::Tuple(*items));
    object.Set("current", items->front());
    Value cycler = Value::MakeDict(std::move(object));
    const std::weak_ptr<Dict> self = cycler.weak_dict();
    const auto move_to = [items, position, self](size_t to) {
      *position = to;
      if (const std::shared_ptr<Dict> object = self.lock()) object->Set("current", (*items)[to]);
    };
    cycler.mutable_dict().Set("next", Value::MakeFunction("next", [items, position, move_to](CallArgs&) -> absl::StatusOr<Value> {
      Value current = (*items)[*position];
      move_to((*position + 1) % items->size());
      return current;
    }));
    cycler.mutable_dict().Set("reset", Value::MakeFunction("reset", [move_to](CallArgs&) -> absl::StatusOr<Value> {
      move_to(0);
      return Value::None();
    }));
    return cycler;
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
