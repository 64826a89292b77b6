// Where a model keeps its chat templates, as transformers saves and picks them: tokenizer_config.json's string or
// named templates ("default", and "tool_use" for conversations that offer tools), chat_template.jinja with
// additional_chat_templates/tool_use.jinja, or --chat_template; each error names the file.
#include <filesystem>
#include <fstream>

#include "engine/chat/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using ordered_json = nlohmann::ordered_json;

ChatInput Conversation(bool with_tools) {
  ChatInput input;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "q"}])");
  if (with_tools) input.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  return input;
}

std::string Rendered(const ChatTemplate& t, bool with_tools) {
  absl::StatusOr<std::string> text = t.Render(Conversation(with_tools));
  return text.ok() ? *text : std::string(text.status().message());
}

TEST(LoadChatTemplate, ToolUseTemplateRendersConversationsThatOfferTools) {
  testing::ScopedTempDir dir;
  const std::string config_text = R"({"eos_token": "</s>", "chat_template": [
      {"name": "default", "template": "plain:{{ messages[0].content }}{{ tools is none }}"},
      {"name": "tool_use", "template": "tools:{{ tools | map(attribute='function.name') | join }}<tool_call>"},
      {"name": "rag", "template": "rag"}]})";
  std::ofstream(dir.File("tokenizer_config.json")) << config_text;
  absl::StatusOr<TokenizerConfig> config = ParseTokenizerConfig(config_text, dir.File("tokenizer_config.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::shared_ptr<const ChatTemplate>> t = LoadChatTemplate(dir.path(), *config, "");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_NE(*t, nullptr);
  EXPECT_TRUE((*t)->has_tool_use());
  EXPECT_EQ(Rendered(**t, false), "plain:qTrue");
  EXPECT_EQ(Rendered(**t, true), "tools:f<tool_call>") << "tools given: the tool_use template, as apply_chat_template picks it";
  EXPECT_EQ((*t)->SourceFor(true).find("<tool_call>") != std::string::npos, true) << "the syntax of calls is read from it";
  EXPECT_EQ((*t)->SourceFor(false), (*t)->source());

  // --chat_template replaces them all.
  std::ofstream(dir.File("override.jinja")) << "override";
  t = LoadChatTemplate(dir.path(), *config, dir.File("override.jinja"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->has_tool_use());
  EXPECT_EQ(Rendered(**t, true), "override");

  // Named templates without a default: an error naming the file and the names (not silently no template).
  config->chat_templates.erase("default");
  t = LoadChatTemplate(dir.path(), *config, "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), dir.File("tokenizer_config.json") + ": chat_template: no template named \"default\" (it names rag, tool_use)");

  // An error in the tool_use template names it.
  config->chat_templates["default"] = "ok";
  config->chat_templates["tool_use"] = "{% call %}";
  t = LoadChatTemplate(dir.path(), *config, "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(std::string(t.status().message()).rfind(dir.File("tokenizer_config.json") + " (chat_template \"tool_use\"): chat template: ", 0), 0u)
      << t.status();
}

TEST(LoadChatTemplate, JinjaFilesBesideTheModelComeFirst) {
  testing::ScopedTempDir dir;
  TokenizerConfig config;
  config.chat_templates["default"] = "from tokenizer_config";
  std::ofstream(dir.File("chat_template.jinja")) << "file:{{ messages | length }}";
  absl::StatusOr<std::shared_ptr<const ChatTemplate>> t = LoadChatTemplate(dir.path(), config, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->has_tool_use());
  EXPECT_EQ(Rendered(**t, true), "file:1");

  std::filesystem::create_directories(dir.File("additional_chat_templates"));
  std::ofstream(dir.File("additional_chat_templates/tool_use.jinja")) << "file tools:{{ tools | length }}";
  t = LoadChatTemplate(dir.path(), config, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Rendered(**t, false), "file:1");
  EXPECT_EQ(Rendered(**t, true), "file tools:1");

  std::ofstream(dir.File("additional_chat_templates/tool_use.jinja")) << "{{ tools | length }";
  t = LoadChatTemplate(dir.path(), config, "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(std::string(t.status().message()).rfind(dir.File("additional_chat_templates/tool_use.jinja") + ": chat template: line 1", 0), 0u)
      << t.status();
}

}  // namespace
}  // namespace arach
