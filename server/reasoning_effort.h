// OpenAI's reasoning effort (chat's `reasoning_effort`, the Responses API's `reasoning.effort`) as a model's chat
// template takes it. Models are told how much to reason through their template: a template that reads a
// `reasoning_effort` variable gets the effort as it (vLLM's convention, gpt-oss-style templates); a hybrid template
// that reads `enable_thinking` (Qwen3's) thinks unless the effort is "none" (such a model cannot grade its effort:
// minimal to xhigh all think); a template with neither has no reasoning to set, and the request is refused naming
// the parameter, as OpenAI refuses it for models that do not reason.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/chat/chat_template.h"
#include "nlohmann/json.hpp"

namespace arach::server {

// `value` (the parameter `field`) as an effort: null is none given; else one of OpenAI's efforts ("none",
// "minimal", "low", "medium", "high", "xhigh"), anything else INVALID_ARGUMENT naming `field`.
absl::StatusOr<std::optional<std::string>> ReadReasoningEffort(const nlohmann::json& value, const std::string& field);

// Sets `effort` in `input`'s template variables (input.extra) as `chat_template` takes it (above). A variable that
// chat_template_kwargs already sets to another value is an error naming both.
absl::Status ApplyReasoningEffort(const std::string& effort, const ChatTemplate& chat_template, ChatInput& input,
                                  const std::string& field);

}  // namespace arach::server
