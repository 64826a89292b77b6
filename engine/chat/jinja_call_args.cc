#include "engine/chat/jinja_call_args.h"

#include "absl/strings/str_cat.h"

namespace arach::jinja {

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

}  // namespace arach::jinja
