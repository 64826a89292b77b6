#include "server/chat_prompt_fit.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string RoleOf(const ordered_json& message) {
  const auto role = message.find("role");
  return role != message.end() && role->is_string() ? role->get<std::string>() : "";
}

// The index of every user message: where each exchange begins.
std::vector<size_t> ExchangeStarts(const ordered_json& messages) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (RoleOf(messages[i]) == "user") starts.push_back(i);
  }
  return starts;
}

// RenderChatPrompt, with the model's context as a length limit too.
absl::StatusOr<ChatPrompt> RenderWithin(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                        const std::string& field, const ChatTemplate* own_template) {
  absl::StatusOr<ChatPrompt> prompt = RenderChatPrompt(engine, limits, input, field, own_template);
  if (!prompt.ok()) return prompt;
  if (absl::Status room = CheckPromptLeavesRoom(engine, *prompt, field); !room.ok()) return room;
  return prompt;
}

bool TooLong(const absl::StatusOr<ChatPrompt>& prompt) { return !prompt.ok() && IsPromptTooLong(prompt.status()); }

}  // namespace

int DroppableExchanges(const ChatInput& input) {
  const size_t exchanges = ExchangeStarts(input.messages).size();
  return exchanges > 1 ? static_cast<int>(exchanges - 1) : 0;
}

ChatInput WithoutOldestExchanges(const ChatInput& input, int dropped) {
  if (dropped <= 0) return input;
  const std::vector<size_t> starts = ExchangeStarts(input.messages);
  ChatInput shorter = input;
  shorter.messages = ordered_json::array();
  for (size_t i = 0; i < starts.front(); ++i) {
    const std::string role = RoleOf(input.messages[i]);
    if (role == "system" || role == "developer") shorter.messages.push_back(input.messages[i]);
  }
  const size_t keep_from = starts[static_cast<size_t>(std::min<int>(dropped, static_cast<int>(starts.size()) - 1))];
  for (size_t i = keep_from; i < input.messages.size(); ++i) shorter.messages.push_back(input.messages[i]);
  return shorter;
}

absl::StatusOr<ChatPrompt> RenderChatPromptToFit(const Engine& engine, const RequestLimits& limits, const ChatInput& input,
                                                 const std::string& field, int* dropped, const ChatTemplate* own_template) {
  if (dropped != nullptr) *dropped = 0;
  absl::StatusOr<ChatPrompt> whole = RenderWithin(engine, limits, input, field, own_template);
  const int droppable = DroppableExchanges(input);
  if (!TooLong(whole) || droppable == 0) return whole;
  absl::StatusOr<ChatPrompt> shortest = RenderWithin(engine, limits, WithoutOldestExchanges(input, droppable), field, own_template);
  if (!shortest.ok()) {
    if (!TooLong(shortest)) return shortest;
    return absl::Status(shortest.status().code(), absl::StrCat(shortest.status().message(), " (truncation \"auto\" kept only the "
                                                                "last user message and what follows it)"));
  }
  // Dropping `fails` exchanges is too long still, dropping `fits` fits: halve the gap.
  int fails = 0;
  int fits = droppable;
  ChatPrompt best = std::move(*shortest);
  while (fits - fails > 1) {
    const int mid = fails + (fits - fails) / 2;
    absl::StatusOr<ChatPrompt> prompt = RenderWithin(engine, limits, WithoutOldestExchanges(input, mid), field, own_template);
    if (prompt.ok()) {
      fits = mid;
      best = std::move(*prompt);
    } else if (TooLong(prompt)) {
      fails = mid;
    } else {
      return prompt.status();
    }
  }
  if (dropped != nullptr) *dropped = fits;
  return best;
}

}  // namespace arach::server
