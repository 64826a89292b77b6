#include "engine/tokenizer/json_component.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

absl::Status JsonComponent::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(where_, ": ", what));
}

const nlohmann::json* JsonComponent::Get(const std::string& key) {
  read_.insert(key);
  const auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

absl::StatusOr<std::string> JsonComponent::Type() {
  const nlohmann::json* type = Get("type");
  if (type == nullptr || !type->is_string()) return Error("needs a string \"type\"");
  return type->get<std::string>();
}

absl::StatusOr<bool> JsonComponent::Bool(const std::string& key, bool fallback) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return Error(absl::StrCat("\"", key, "\" must be true or false"));
  return value->get<bool>();
}

absl::StatusOr<std::string> JsonComponent::String(const std::string& key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !value->is_string()) return Error(absl::StrCat("needs a string \"", key, "\""));
  return value->get<std::string>();
}

absl::StatusOr<std::string> JsonComponent::String(const std::string& key, const std::string& fallback) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return fallback;
  if (!value->is_string()) return Error(absl::StrCat("\"", key, "\" must be a string"));
  return value->get<std::string>();
}

absl::StatusOr<int64_t> JsonComponent::Int(const std::string& key, int64_t fallback) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return fallback;
  if (!value->is_number_integer()) return Error(absl::StrCat("\"", key, "\" must be an integer"));
  return value->get<int64_t>();
}

absl::StatusOr<const nlohmann::json*> JsonComponent::Array(const std::string& key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !value->is_array()) return Error(absl::StrCat("needs an array \"", key, "\""));
  return value;
}

absl::StatusOr<const nlohmann::json*> JsonComponent::Object(const std::string& key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !value->is_object()) return Error(absl::StrCat("needs an object \"", key, "\""));
  return value;
}

absl::Status JsonComponent::CheckAllRead() const {
  for (const auto& [key, value] : object_.items()) {
    if (read_.count(key) == 0) return Error(absl::StrCat("option \"", key, "\" is not supported"));
  }
  return absl::OkStatus();
}

std::string JsonComponent::Child(const std::string& key) const { return absl::StrCat(where_, ".", key); }
std::string JsonComponent::Child(const std::string& key, size_t index) const { return absl::StrCat(where_, ".", key, "[", index, "]"); }

// {"String": "x"} (literal) or {"Regex": "..."}: the pattern of Replace and Split.
absl::StatusOr<std::shared_ptr<const Regex>> ReadPattern(JsonComponent& c, const std::string& key) {
  ARACH_ASSIGN_OR_RETURN(const nlohmann::json* pattern, c.Object(key));
  if (pattern->size() == 1 && pattern->contains("String") && (*pattern)["String"].is_string()) {
    return Regex::Compile(Regex::Escape((*pattern)["String"].get<std::string>()));
  }
  if (pattern->size() == 1 && pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
    absl::StatusOr<std::shared_ptr<const Regex>> regex = Regex::Compile((*pattern)["Regex"].get<std::string>());
    if (!regex.ok()) return c.Error(regex.status().message());
    return regex;
  }
  return c.Error(absl::StrCat("\"", key, "\" must be {\"String\": ...} or {\"Regex\": ...}"));
}

absl::StatusOr<JsonComponent> ComponentOf(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, ": must be an object"));
  return JsonComponent(object, where);
}

}  // namespace arach
