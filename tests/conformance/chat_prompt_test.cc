// RenderChatPrompt (server/chat_prompt.h) on a fixture engine with templates of both conventions for the arguments of
// earlier tool calls: objects for the templates written for transformers (`arguments | tojson`), text for those that
// splice the arguments into the prompt as strings (DeepSeek's `'...' + arguments`), which fail on objects.
#include <fstream>

#include "absl/strings/match.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/chat_prompt.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// gpt2-tiny serving `template_source` as its chat template.
std::unique_ptr<Engine> EngineWithTemplate(const testing::ScopedTempDir& dir, const std::string& template_source) {
  const std::string path = dir.File("chat.jinja");
  std::ofstream(path) << template_source;
  LoadModelOptions options;
  options.chat_template = path;
  auto bundle = LoadModelBundle(testing::FixturePath("gpt2-tiny"), options);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok()) return nullptr;
  auto engine = Engine::Create(std::move(*bundle), EngineConfig{});
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// A user question and an assistant turn calling `f` with `arguments` (text or object, as a client sends them).
ChatInput CallingConversation(const ordered_json& arguments) {
  ChatInput input;
  input.messages = ordered_json::array({{{"role", "user"}, {"content", "q"}}});
  input.messages.push_back({{"role", "assistant"}, {"content", nullptr},
                            {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments}}}}}}});
  return input;
}

constexpr const char* kCall = "{% for m in messages %}{% for c in m.tool_calls or [] %}";
constexpr const char* kEnd = "{% endfor %}{% endfor %}";

TEST(RenderChatPrompt, ToolArgumentsAreObjectsOrTextAsTheTemplateIsWritten) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  RequestLimits limits;
  const ordered_json as_text = "{\"city\": \"Paris\",  \"days\": 3}";  // spaced as the client wrote it
  const ordered_json as_object = {{"city", "Paris"}, {"days", 3}};

  auto tojson = EngineWithTemplate(dir, std::string(kCall) + "{{ c.function.name }}={{ c.function.arguments | tojson }}" + kEnd);
  ASSERT_NE(tojson, nullptr);
  for (const ordered_json& arguments : {as_text, as_object}) {
    auto prompt = RenderChatPrompt(*tojson, limits, CallingConversation(arguments), "messages");
    ASSERT_TRUE(prompt.ok()) << prompt.status();
    EXPECT_EQ(prompt->text, R"(f={"city": "Paris", "days": 3})") << "an object, however it was sent";
  }

  auto spliced = EngineWithTemplate(dir, std::string(kCall) + "{{ '<call>' + c.function.name + ' ' + c.function.arguments + '</call>' }}" + kEnd);
  ASSERT_NE(spliced, nullptr);
  auto prompt = RenderChatPrompt(*spliced, limits, CallingConversation(as_text), "messages");
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->text, "<call>f {\"city\": \"Paris\",  \"days\": 3}</call>") << "the text as the client sent it";
  prompt = RenderChatPrompt(*spliced, limits, CallingConversation(as_object), "messages");
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->text, "<call>f {\"city\":\"Paris\",\"days\":3}</call>") << "an object as its JSON text";

  auto failing = EngineWithTemplate(dir, std::string(kCall) + "{{ raise_exception('no calls here') }}" + kEnd);
  ASSERT_NE(failing, nullptr);
  prompt = RenderChatPrompt(*failing, limits, CallingConversation(as_text), "messages");
  EXPECT_EQ(prompt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(prompt.status().message(), "no calls here")) << prompt.status();
  EXPECT_TRUE(absl::StartsWith(prompt.status().message(), "messages: ")) << prompt.status();
}

}  // namespace
}  // namespace arach::server
