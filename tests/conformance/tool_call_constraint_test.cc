// Tool-call constraints (server/chat_output/tools.h) through the engine where the end-to-end suites cannot reach:
// Mistral's [TOOL_CALLS] as a special token of the tokenizer, which the constraint must name by id; a turn that
// starts inside <think>, walked token by token (a tiny model does not close its reasoning on cue).
#include <filesystem>
#include <fstream>

#include "absl/strings/str_replace.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/core/mapped_file.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/chat_output_parser.h"
#include "server/chat_output/tools.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using testing::CollectingObserver;

// Mistral's [TOOL_CALLS] is a special token of its own tokenizer: the constraint may write it (its text is in the
// constraint's vocabulary), the text keeps it, and the call parses. llama3-tiny with one reserved special token renamed [TOOL_CALLS] stands in for a
// Mistral tokenizer (no Mistral fixture is at hand).
TEST(StructuredOutputToolCalls, AMistralMarkerThatIsASpecialTokenOpensTheCall) {
  ARACH_REQUIRE_FIXTURES();
  if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
  namespace fs = std::filesystem;
  testing::ScopedTempDir dir;
  for (const fs::directory_entry& entry : fs::directory_iterator(testing::FixturePath("llama3-tiny"))) {
    const std::string name = entry.path().filename().string();
    if (name == "tokenizer.json" || name == "tokenizer_config.json") {
      absl::StatusOr<std::string> text = ReadFileToString(entry.path().string());
      ASSERT_TRUE(text.ok());
      std::ofstream(dir.File(name)) << absl::StrReplaceAll(*text, {{"<|reserved_special_token_10|>", "[TOOL_CALLS]"}});
    } else {
      fs::create_symlink(entry.path(), dir.File(name));
    }
  }
  auto bundle = LoadModelBundle(dir.path(), LoadModelOptions{});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  auto engine = Engine::Create(std::move(*bundle), EngineConfig{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  const Tokenizer& tokenizer = (*engine)->tokenizer();
  const std::optional<int32_t> marker = tokenizer.TokenToId("[TOOL_CALLS]");
  ASSERT_TRUE(marker && tokenizer.IsSpecial(*marker));

  server::ChatOutputFormat format;
  format.tools = server::ToolCallSyntax::kMistral;
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "add", "parameters": {
      "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a"]}}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice required;
  required.mode = server::ToolChoice::Mode::kRequired;
  auto plan = server::PlanChatTurn(format, *tools, required, /*parallel=*/false, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->keep_special_tokens);
  ASSERT_TRUE(plan->constraint.active());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    EngineRequest r;
    r.prompt = *tokenizer.Encode("call add", true);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.max_tokens = 60;
    r.sampling.skip_special_tokens = false;
    r.sampling.logit_bias = {{*marker, 100.0f}};  // as a trained model would: the marker token, not its spelling
    r.constraint = plan->constraint;
    auto observer = std::make_shared<CollectingObserver>();
    ASSERT_TRUE((*engine)->Submit(std::move(r), observer).ok());
    ASSERT_TRUE(observer->Wait());
    EXPECT_EQ(observer->finish().reason, FinishReason::kStop) << observer->text();
    EXPECT_EQ(observer->tokens().front(), *marker) << "the constraint lets the special token itself open the call";
    server::ChatOutputParser parser(format, true, server::TurnStart::kOpen);
    server::ChatOutputDelta out = parser.Feed(observer->text());
    const server::ChatOutputDelta rest = parser.Finish();
    out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    ASSERT_EQ(out.tool_calls.size(), 1u) << observer->text();
    EXPECT_EQ(out.tool_calls[0].name, "add");
    const nlohmann::json arguments = nlohmann::json::parse(out.tool_calls[0].arguments);
    EXPECT_TRUE(arguments["a"].is_number_integer() && arguments["a"] >= 0 && arguments["a"] <= 9) << out.tool_calls[0].arguments;
  }
}

// A turn that starts inside <think> (a prefill that opened it; a template that does) with tool_choice required: the
// constraint lets the reasoning run to </think> (and a little whitespace), then holds the turn to the call; the turn
// cannot end before it, and a call written inside the reasoning is reasoning text, not the call.
TEST(StructuredOutputToolCalls, ATurnStartingInsideReasoningRunsToItsCloseThenCalls) {
  ARACH_REQUIRE_FIXTURES();
  if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
  auto tokenizer = LoadTokenizer(testing::FixturePath("qwen3-tiny"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::optional<int32_t> end_of_turn = (*tokenizer)->TokenToId("<|im_end|>");
  ASSERT_TRUE(end_of_turn.has_value());
  server::ChatOutputFormat format;
  format.tools = server::ToolCallSyntax::kHermes;
  format.reasoning = true;
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice required;
  required.mode = server::ToolChoice::Mode::kRequired;
  const std::string prefill = "<think>\nThe user asks";
  auto plan = server::PlanChatTurn(format, *tools, required, /*parallel=*/false, "<|im_start|>assistant\n" + prefill, prefill,
                                   OutputConstraint{}, **tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->turn_start, server::TurnStart::kReasoning);
  ASSERT_TRUE(plan->constraint.active()) << "the turn is held to the tools";

  ConstraintCompiler compiler(**tokenizer, 151936, {*end_of_turn});
  auto compiled = compiler.Compile(plan->constraint, "tools");
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string call = "<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>";
  // Feeds `text`; whether every token was accepted, and whether the turn may end after it.
  const auto walk = [&](const std::string& text, bool& may_end) {
    auto matcher = ConstraintMatcher::Create(*compiled, {*end_of_turn});
    if (!matcher.ok()) return false;
    auto ids = (*tokenizer)->Encode(text, /*add_special_tokens=*/false);
    if (!ids.ok()) return false;
    for (int32_t id : *ids) {
      if (!matcher->Accept(id)) return false;
    }
    auto allowed = matcher->AllowedTokens();
    may_end = allowed.ok() && ((*allowed)[*end_of_turn / 32] >> (*end_of_turn % 32) & 1u) != 0;
    return true;
  };
  bool may_end = true;
  ASSERT_TRUE(walk(" about the weather.", may_end));
  EXPECT_FALSE(may_end) << "the turn cannot end inside its reasoning";
  ASSERT_TRUE(walk(" about the weather." + call, may_end)) << "a call inside the reasoning is reasoning text";
  EXPECT_FALSE(may_end) << "and not the call the turn needs";
  ASSERT_TRUE(walk(" about the weather.</think>\n\n" + call, may_end));
  EXPECT_TRUE(may_end) << "the call after the reasoning completes the turn";
  for (const std::string after : {"", "\n", " \n"}) {
    may_end = false;
    ASSERT_TRUE(walk(" about the weather.</think>" + after + call, may_end)) << "other whitespace after </think>: '" << after << "'";
    EXPECT_TRUE(may_end);
  }
  EXPECT_FALSE(walk(" about the weather.</think>\n\n\n\n\n\n\n\n" + call, may_end)) << "a run of whitespace is bounded";
  EXPECT_FALSE(walk(" about the weather.</think>\n\nSunny.", may_end)) << "required: no content after the reasoning";
}

}  // namespace
}  // namespace arach
