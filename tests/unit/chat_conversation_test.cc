// A conversation as the chat templates see it (server/chat_prompt.h): tool-call arguments reach the template as
// objects, as transformers and vLLM hand them over, whether the client sent an object or its JSON text.
#include "engine/chat/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/chat_prompt.h"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;

TEST(ToolCallArguments, AnObjectOrItsTextNothingElse) {
  EXPECT_EQ(ToolCallArguments(ordered_json::parse(R"("{\"b\": 1, \"a\": [2]}")"))->dump(), R"({"b":1,"a":[2]})")
      << "the client's key order kept";
  EXPECT_EQ(ToolCallArguments(ordered_json::parse(R"({"x": null})"))->dump(), R"({"x":null})");
  EXPECT_EQ(ToolCallArguments(ordered_json(""))->dump(), "{}") << "no arguments";
  EXPECT_EQ(ToolCallArguments(ordered_json(" \n"))->dump(), "{}");
  for (const char* bad : {R"("[1]")", R"("42")", R"("{\"a\": 1")", R"("not json")", "7", "null", "[]"}) {
    EXPECT_FALSE(ToolCallArguments(ordered_json::parse(bad)).has_value()) << bad;
  }
  EXPECT_FALSE(ToolCallArguments(ordered_json(std::string(100000, '[') + std::string(100000, ']'))).has_value())
      << "nesting is bounded before the text is parsed";
}

TEST(ConversationForTemplate, ToolCallArgumentsReachTheTemplateAsObjects) {
  auto tmpl = ChatTemplate::Parse(
      "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.name }}{{ c.function.arguments | tojson }}"
      "{% for k, v in c.function.arguments.items() %} {{ k }}={{ v }}{% endfor %};{% endfor %}{% endfor %}",
      TokenizerConfig{}, "test");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  ChatInput input;
  input.messages = ordered_json::parse(R"([
      {"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}},
          {"id": "c2", "type": "function", "function": {"name": "g", "arguments": {"z": true}}},
          {"id": "c3", "type": "function", "function": {"name": "h", "arguments": ""}}]}])");
  ASSERT_TRUE(CheckConversation(input.messages, "tool_calls").ok());
  const ChatInput conversation = ConversationForTemplate(input, **tmpl);
  absl::StatusOr<std::string> text = (*tmpl)->Render(conversation);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, R"(f{"city": "Paris", "days": 3} city=Paris days=3;g{"z": true} z=True;h{};)");
  EXPECT_EQ(conversation.messages[1]["content"], "") << "a turn that only calls tools renders with empty content";
  EXPECT_TRUE(input.messages[1]["tool_calls"][0]["function"]["arguments"].is_string()) << "the request itself is left as sent";
}

TEST(CheckConversation, ToolCallArgumentsThatAreNotAnObjectAreNamed) {
  for (const char* arguments : {R"("[1, 2]")", R"("{\"a\":")", "5"}) {
    const ordered_json messages = ordered_json::parse(
        std::string(R"([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": )") +
        arguments + "}}]}]");
    const absl::Status status = CheckConversation(messages, "tool_calls");
    EXPECT_EQ(status.message(), "messages[1].tool_calls[0].function.arguments: is required: a JSON object or its text") << arguments;
  }
}

}  // namespace
}  // namespace arach::server
