#include "server/reasoning_effort.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server {
namespace {

constexpr std::string_view kEfforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};

// Sets template variable `name` to `value` unless chat_template_kwargs set it to something else.
absl::Status SetVariable(ChatInput& input, const std::string& name, nlohmann::ordered_json value, const std::string& field) {
  const auto given = input.extra.find(name);
  if (given != input.extra.end() && *given != value) {
    return InvalidField(field, absl::StrCat("asks for ", name, " = ", value.dump(), ", but chat_template_kwargs.", name, " is ",
                                            given->dump()));
  }
  input.extra[name] = std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ReadReasoningEffort(const nlohmann::json& value, const std::string& field) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string() && std::find(std::begin(kEfforts), std::end(kEfforts), value.get<std::string>()) != std::end(kEfforts)) {
    return value.get<std::string>();
  }
  return InvalidField(field, "must be one of none, minimal, low, medium, high, xhigh");
}

absl::Status ApplyReasoningEffort(const std::string& effort, const ChatTemplate& chat_template, ChatInput& input,
                                  const std::string& field) {
  // What the template reads, as ConversationForTemplate tells whether it knows the developer role: by its source.
  const std::string& source = chat_template.SourceFor(!input.tools.is_null());
  if (source.find("reasoning_effort") != std::string::npos) return SetVariable(input, "reasoning_effort", effort, field);
  if (source.find("enable_thinking") != std::string::npos) return SetVariable(input, "enable_thinking", effort != "none", field);
  return InvalidField(field, "is not supported by this model: its chat template reads neither reasoning_effort nor enable_thinking, "
                             "so it has no reasoning to set");
}

}  // namespace arach::server
