// OpenAI's reasoning effort reaches a model as its chat template takes it (server/reasoning_effort.h): as
// `reasoning_effort` where the template reads it, as Qwen3's `enable_thinking` switch, or not at all (refused).
#include "server/reasoning_effort.h"

#include "gtest/gtest.h"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::shared_ptr<const ChatTemplate> Template(const std::string& source) {
  absl::StatusOr<std::shared_ptr<const ChatTemplate>> t = ChatTemplate::Parse(source, TokenizerConfig(), "test");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

ChatInput Conversation(ordered_json kwargs = ordered_json::object()) {
  ChatInput input;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "q"}])");
  input.extra = std::move(kwargs);
  return input;
}

// What a template renders for `effort` (or the error's message).
std::string Rendered(const ChatTemplate& t, const std::string& effort, ordered_json kwargs = ordered_json::object()) {
  ChatInput input = Conversation(std::move(kwargs));
  if (absl::Status s = ApplyReasoningEffort(effort, t, input, "reasoning.effort"); !s.ok()) return std::string(s.message());
  absl::StatusOr<std::string> text = t.Render(input);
  return text.ok() ? *text : std::string(text.status().message());
}

TEST(ReasoningEffort, ReachesTheTemplateAsItReadsIt) {
  const auto effort = Template("effort={{ reasoning_effort | default('unset') }}");
  EXPECT_EQ(Rendered(*effort, "low"), "effort=low");
  EXPECT_EQ(Rendered(*effort, "none"), "effort=none");
  const auto qwen = Template("{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>{% endif %}q");
  EXPECT_EQ(Rendered(*qwen, "none"), "<think>\n\n</think>q") << "none turns thinking off";
  for (const std::string e : {"minimal", "low", "medium", "high", "xhigh"}) EXPECT_EQ(Rendered(*qwen, e), "q") << e << " thinks";
  const auto plain = Template("{{ messages[0].content }}");
  EXPECT_EQ(Rendered(*plain, "high"),
            "reasoning.effort: is not supported by this model: its chat template reads neither reasoning_effort nor "
            "enable_thinking, so it has no reasoning to set");
}

TEST(ReasoningEffort, AgreesWithChatTemplateKwargsOrSaysBoth) {
  const auto qwen = Template("{% if enable_thinking is false %}off{% else %}on{% endif %}");
  EXPECT_EQ(Rendered(*qwen, "none", {{"enable_thinking", false}}), "off");
  EXPECT_EQ(Rendered(*qwen, "high", {{"enable_thinking", false}}),
            "reasoning.effort: asks for enable_thinking = true, but chat_template_kwargs.enable_thinking is false");
}

TEST(ReasoningEffort, OnlyOpenAIsEfforts) {
  EXPECT_EQ(*ReadReasoningEffort(nlohmann::json(nullptr), "reasoning_effort"), std::nullopt);
  EXPECT_EQ(*ReadReasoningEffort("minimal", "reasoning_effort"), "minimal");
  for (const nlohmann::json& bad : {nlohmann::json("max"), nlohmann::json(1), nlohmann::json("High")}) {
    absl::StatusOr<std::optional<std::string>> read = ReadReasoningEffort(bad, "reasoning_effort");
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_EQ(read.status().message(), "reasoning_effort: must be one of none, minimal, low, medium, high, xhigh");
  }
}

}  // namespace
}  // namespace arach::server
