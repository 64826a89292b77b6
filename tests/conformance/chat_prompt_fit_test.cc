// The Responses API's truncation "auto" (server/chat_prompt_fit.h): which messages an exchange holds, and the
// fewest oldest exchanges dropped for a conversation's prompt to fit, on qwen3-tiny with its own chat template.
#include "server/chat_prompt_fit.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach::server {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json Message(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

// A system message, then `exchanges` exchanges: a user question, an assistant answer that calls a tool, the tool's
// result and the assistant's reply (the last exchange: the question alone).
ChatInput Conversation(int exchanges, int words_per_message) {
  ChatInput input;
  input.messages.push_back(Message("system", "Be brief."));
  for (int e = 0; e < exchanges; ++e) {
    std::string words;
    for (int w = 0; w < words_per_message; ++w) absl::StrAppend(&words, " q", e, "w", w);
    input.messages.push_back(Message("user", "Question" + words));
    if (e + 1 == exchanges) break;
    input.messages.push_back({{"role", "assistant"}, {"content", nullptr},
                              {"tool_calls", {{{"id", absl::StrCat("c", e)}, {"type", "function"},
                                               {"function", {{"name", "look"}, {"arguments", "{}"}}}}}}});
    input.messages.push_back({{"role", "tool"}, {"tool_call_id", absl::StrCat("c", e)}, {"content", "found" + words}});
    input.messages.push_back(Message("assistant", "Answer" + words));
  }
  return input;
}

TEST(ChatPromptFit, AnExchangeIsAUserMessageAndAllThatFollowsItUpToTheNext) {
  const ChatInput input = Conversation(3, 1);  // system, then 4 + 4 + 1 messages
  ASSERT_EQ(input.messages.size(), 10u);
  EXPECT_EQ(DroppableExchanges(input), 2);
  EXPECT_EQ(WithoutOldestExchanges(input, 0).messages, input.messages);
  const ChatInput one = WithoutOldestExchanges(input, 1);
  ASSERT_EQ(one.messages.size(), 6u);
  EXPECT_EQ(one.messages[0], input.messages[0]) << "the instructions stay";
  EXPECT_EQ(one.messages[1], input.messages[5]) << "the second exchange's question comes next";
  const ChatInput two = WithoutOldestExchanges(input, 2);
  ASSERT_EQ(two.messages.size(), 2u);
  EXPECT_EQ(two.messages[1], input.messages[9]);

  ChatInput greeting;  // an assistant greeting before the first question goes with the first exchange
  greeting.messages = {Message("developer", "d"), Message("assistant", "Hello"), Message("user", "a"), Message("assistant", "b"),
                       Message("user", "c")};
  EXPECT_EQ(WithoutOldestExchanges(greeting, 1).messages, ordered_json({Message("developer", "d"), Message("user", "c")}));
  ChatInput single;
  single.messages = {Message("user", "only")};
  EXPECT_EQ(DroppableExchanges(single), 0);
}

class ChatPromptFitOnQwen3 : public ::testing::Test {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    engine_ = testing::MakeFixtureEngine("qwen3-tiny");
    ASSERT_NE(engine_, nullptr);
    ASSERT_NE(engine_->chat_template(), nullptr);
  }
  std::unique_ptr<Engine> engine_;
};

TEST_F(ChatPromptFitOnQwen3, DropsTheFewestOldestExchangesThatMakeThePromptFit) {
  const ChatInput input = Conversation(8, 12);
  RequestLimits unlimited;
  absl::StatusOr<ChatPrompt> whole = RenderChatPrompt(*engine_, unlimited, input, "input");
  ASSERT_TRUE(whole.ok()) << whole.status();
  RequestLimits limits;
  for (int cap : {static_cast<int>(whole->ids.size()), static_cast<int>(whole->ids.size()) / 2, 90}) {
    limits.max_prompt_tokens = cap;
    int dropped = -1;
    absl::StatusOr<ChatPrompt> fitted = RenderChatPromptToFit(*engine_, limits, input, "input", &dropped);
    ASSERT_TRUE(fitted.ok()) << cap << ": " << fitted.status();
    EXPECT_LE(fitted->ids.size(), static_cast<size_t>(cap));
    absl::StatusOr<ChatPrompt> expected = RenderChatPrompt(*engine_, unlimited, WithoutOldestExchanges(input, dropped), "input");
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(fitted->text, expected->text) << "the prompt of the shorter conversation";
    if (dropped == 0) {
      EXPECT_EQ(cap, static_cast<int>(whole->ids.size())) << "nothing dropped where the whole conversation fits";
      continue;
    }
    absl::StatusOr<ChatPrompt> one_fewer = RenderChatPrompt(*engine_, limits, WithoutOldestExchanges(input, dropped - 1), "input");
    ASSERT_FALSE(one_fewer.ok()) << cap << ": dropping " << dropped - 1 << " would have been enough";
    EXPECT_TRUE(IsPromptTooLong(one_fewer.status())) << one_fewer.status();
  }
}

TEST_F(ChatPromptFitOnQwen3, TheLastExchangeStaysAndTheModelsContextCounts) {
  const ChatInput input = Conversation(4, 40);
  RequestLimits limits;
  limits.max_prompt_tokens = 20;  // less than the last question alone
  absl::StatusOr<ChatPrompt> fitted = RenderChatPromptToFit(*engine_, limits, input, "input");
  ASSERT_FALSE(fitted.ok());
  EXPECT_EQ(fitted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fitted.status().message().find("kept only the last user message"), std::string::npos) << fitted.status();

  // Past the model's context (40,960 positions) with no limit of the server's: the context is the bound.
  ChatInput long_history = Conversation(2, 1);
  std::string filler;
  for (int i = 0; i < 25000; ++i) absl::StrAppend(&filler, " ", i);
  long_history.messages[1]["content"] = filler;  // the first question
  int dropped = 0;
  absl::StatusOr<ChatPrompt> within = RenderChatPromptToFit(*engine_, RequestLimits{}, long_history, "input", &dropped);
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ(dropped, 1);
  EXPECT_LT(within->ids.size(), 100u);
}

TEST_F(ChatPromptFitOnQwen3, AConversationTheTemplateRefusesIsRefusedWhateverItsLength) {
  ChatInput input = Conversation(3, 30);
  input.messages.push_back(Message("narrator", "x"));  // Qwen3's template raises on an unknown role
  RequestLimits limits;
  limits.max_prompt_tokens = 60;
  absl::StatusOr<ChatPrompt> fitted = RenderChatPromptToFit(*engine_, limits, input, "input");
  ASSERT_FALSE(fitted.ok());
  EXPECT_FALSE(IsPromptTooLong(fitted.status())) << fitted.status();
}

}  // namespace
}  // namespace arach::server
