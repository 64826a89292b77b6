// Chat templates against ../shared/fixtures/chat: the real templates of Llama 3, Llama 3.1, Qwen3 and
// Gemma 3 over twelve conversations, with and without the generation prompt (and Qwen3 with
// enable_thinking false), rendered byte for byte as Jinja2 renders them; the cases where the template
// raises fail with its message.
#include <fstream>
#include <sstream>

#include "engine/chat/chat_template.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json LoadOrdered(const std::string& relative) {
  std::ifstream in(testing::FixturePath(relative));
  std::stringstream text;
  text << in.rdbuf();
  return ordered_json::parse(text.str());
}

TokenizerConfig TokensOf(const ordered_json& tokens) {
  TokenizerConfig config;
  for (const auto& [name, field] : {std::pair{"bos_token", &config.bos_token}, std::pair{"eos_token", &config.eos_token},
                                    std::pair{"pad_token", &config.pad_token}, std::pair{"unk_token", &config.unk_token}}) {
    if (tokens.contains(name) && tokens[name].is_string()) *field = tokens[name].get<std::string>();
  }
  return config;
}

TEST(ChatTemplateConformance, EveryFixtureCaseRendersExactly) {
  ARACH_REQUIRE_FIXTURES();
  const ordered_json templates = LoadOrdered("chat/templates.json");
  const ordered_json fixture = LoadOrdered("chat/cases.json");
  int rendered = 0, raised = 0;
  for (const ordered_json& c : fixture["cases"]) {
    const std::string name = c["template"];
    const ordered_json& spec = templates[name];
    auto tmpl = ChatTemplate::Parse(spec["template"].get<std::string>(), TokensOf(spec["tokens"]), name);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    const ordered_json& conversation = fixture["conversations"][c["conversation"].get<std::string>()];
    ChatInput input;
    input.messages = conversation["messages"];
    if (conversation.contains("tools")) input.tools = conversation["tools"];
    input.add_generation_prompt = c["add_generation_prompt"];
    if (c["extra"].is_object()) input.extra = c["extra"];
    const std::string label = name + " / " + c["conversation"].get<std::string>() +
                              (input.add_generation_prompt ? " + generation prompt" : "") + (c["extra"].is_object() ? " + extra" : "");
    const absl::StatusOr<std::string> text = (*tmpl)->Render(input);
    if (c.contains("error")) {
      ASSERT_FALSE(text.ok()) << label << " should raise";
      EXPECT_EQ(text.status().message(), c["error"].get<std::string>()) << label;
      ++raised;
    } else {
      ASSERT_TRUE(text.ok()) << label << ": " << text.status();
      EXPECT_EQ(*text, c["text"].get<std::string>()) << label;
      ++rendered;
    }
  }
  EXPECT_EQ(rendered, 118);
  EXPECT_EQ(raised, 2);
}

}  // namespace
}  // namespace arach
