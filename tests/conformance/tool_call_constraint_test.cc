// Tool-call constraints (server/chat_output/tools.h) through the engine where the end-to-end suites cannot reach:
// Mistral's [TOOL_CALLS], [ARGS] and [THINK] as special tokens of the tokenizer, which the constraint must name by id,
// and Mistral v11's calls walked; a turn that starts inside <think>, walked token by token (a tiny model does not close
// its reasoning on cue); the pythonic syntax's grammars, walked and sampled; tool_choice none's banned call marker.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/chat_output_parser.h"
#include "server/chat_output/python_calls.h"
#include "server/chat_output/tools.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using testing::CollectingObserver;

// llama3-tiny with reserved special tokens renamed [TOOL_CALLS], [ARGS], [THINK] and [/THINK] stands in for a Mistral
// tokenizer (no Mistral fixture is at hand).
absl::StatusOr<std::unique_ptr<Engine>> EngineWithMistralMarkers(const testing::ScopedTempDir& dir) {
  namespace fs = std::filesystem;
  for (const fs::directory_entry& entry : fs::directory_iterator(testing::FixturePath("llama3-tiny"))) {
    const std::string name = entry.path().filename().string();
    if (name == "tokenizer.json" || name == "tokenizer_config.json") {
      ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(entry.path().string()));
      std::ofstream(dir.File(name)) << absl::StrReplaceAll(text, {{"<|reserved_special_token_10|>", "[TOOL_CALLS]"},
                                                                  {"<|reserved_special_token_11|>", "[ARGS]"},
                                                                  {"<|reserved_special_token_12|>", "[THINK]"},
                                                                  {"<|reserved_special_token_13|>", "[/THINK]"}});
    } else {
      fs::create_symlink(entry.path(), dir.File(name));
    }
  }
  ARACH_ASSIGN_OR_RETURN(ModelBundle bundle, LoadModelBundle(dir.path(), LoadModelOptions{}));
  return Engine::Create(std::move(bundle), EngineConfig{});
}

// The tests on that tokenizer: its engine, and the end of a turn (Llama 3's <|eot_id|>).
class MistralMarkers : public ::testing::Test {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
    auto engine = EngineWithMistralMarkers(dir_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
    const std::optional<int32_t> end_of_turn = tokenizer().TokenToId("<|eot_id|>");
    ASSERT_TRUE(end_of_turn.has_value());
    end_of_turn_ = *end_of_turn;
  }
  Engine& engine() { return *engine_; }
  const Tokenizer& tokenizer() { return engine_->tokenizer(); }

  testing::ScopedTempDir dir_;
  std::unique_ptr<Engine> engine_;
  int32_t end_of_turn_ = 0;
};

// Mistral's [TOOL_CALLS] (and v11's [ARGS]) are special tokens of its own tokenizer: the constraint may write them
// (their text is in the constraint's vocabulary), the text keeps them, and the calls parse; in both Mistral syntaxes.
TEST_F(MistralMarkers, SpecialTokensOpenTheCalls) {
  const Tokenizer& tokenizer = this->tokenizer();
  const std::optional<int32_t> marker = tokenizer.TokenToId("[TOOL_CALLS]");
  const std::optional<int32_t> args = tokenizer.TokenToId("[ARGS]");
  ASSERT_TRUE(marker && tokenizer.IsSpecial(*marker) && args && tokenizer.IsSpecial(*args));
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "add", "parameters": {
      "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a"]}}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice required;
  required.mode = server::ToolChoice::Mode::kRequired;
  for (server::ToolCallSyntax syntax : {server::ToolCallSyntax::kMistral, server::ToolCallSyntax::kMistralV11}) {
    server::ChatOutputFormat format;
    format.tools = syntax;
    SCOPED_TRACE(format.ToolsName());
    const bool v11 = syntax == server::ToolCallSyntax::kMistralV11;
    // One call: with the markers' bias a model would call again and again (MistralV11CallsAreHeldToTheirSchemas
    // walks parallel calls).
    auto plan = server::PlanChatTurn(format, *tools, required, /*parallel=*/false, "", "", OutputConstraint{}, tokenizer, "tools",
                                     "tool_choice");
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
      // As a trained model would: the markers' tokens, not their spelling.
      r.sampling.logit_bias = {{*marker, 100.0f}, {*args, 100.0f}};
      r.constraint = plan->constraint;
      auto observer = std::make_shared<CollectingObserver>();
      ASSERT_TRUE(engine().Submit(std::move(r), observer).ok());
      ASSERT_TRUE(observer->Wait());
      EXPECT_EQ(observer->finish().reason, FinishReason::kStop) << observer->text();
      EXPECT_EQ(observer->tokens().front(), *marker) << "the constraint lets the special token itself open the call";
      if (v11) {
        EXPECT_NE(std::find(observer->tokens().begin(), observer->tokens().end(), *args), observer->tokens().end())
            << "and [ARGS] itself: " << observer->text();
      }
      server::ChatOutputParser parser(format, true, server::TurnStart::kOpen);
      server::ChatOutputDelta out = parser.Feed(observer->text());
      server::AppendDelta(out, parser.Finish());  // each call in one piece
      ASSERT_EQ(out.tool_calls.size(), 1u) << observer->text();
      EXPECT_EQ(out.content, "") << observer->text();
      EXPECT_TRUE(out.tool_calls[0].ends);
      EXPECT_EQ(out.tool_calls[0].name, "add");
      const nlohmann::json arguments = nlohmann::json::parse(out.tool_calls[0].arguments);
      EXPECT_TRUE(arguments["a"].is_number_integer() && arguments["a"] >= 0 && arguments["a"] <= 9) << out.tool_calls[0].arguments;
    }
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

// Whether `constraint` accepts `text` as a whole turn (every token, then `end_of_turn`).
bool AcceptsWholeTurn(ConstraintCompiler& compiler, const OutputConstraint& constraint, const Tokenizer& tokenizer,
                      int32_t end_of_turn, const std::string& text) {
  auto compiled = compiler.Compile(constraint, "tools");
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return false;
  auto matcher = ConstraintMatcher::Create(*compiled, {end_of_turn});
  auto ids = tokenizer.Encode(text, /*add_special_tokens=*/false);
  if (!matcher.ok() || !ids.ok()) return false;
  for (int32_t id : *ids) {
    if (!matcher->Accept(id)) return false;
  }
  return matcher->Accept(end_of_turn);
}

// Pythonic arguments keep the integer bounds and string lengths of their schema: every integer of a span around
// each bound is walked (accepted exactly when within), and strings of each length.
TEST(StructuredOutputToolCalls, PythonicArgumentsKeepIntegerBoundsAndStringLengths) {
  ARACH_REQUIRE_FIXTURES();
  if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
  auto tokenizer = LoadTokenizer(testing::FixturePath("qwen3-tiny"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::optional<int32_t> end_of_turn = (*tokenizer)->TokenToId("<|im_end|>");
  ASSERT_TRUE(end_of_turn.has_value());
  server::ChatOutputFormat format;
  format.tools = server::ToolCallSyntax::kPythonic;
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {
      "type": "object", "properties": {
        "n": {"type": "integer", "minimum": -105, "maximum": 1017},
        "m": {"type": "integer", "exclusiveMinimum": 7},
        "k": {"type": "integer", "maximum": -3.5},
        "s": {"type": "string", "minLength": 2, "maxLength": 4},
        "p": {"type": "integer", "minimum": 123, "maximum": 4567},
        "z": {"type": "integer", "minimum": 0, "maximum": 0}}}}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice required;
  required.mode = server::ToolChoice::Mode::kRequired;
  auto plan = server::PlanChatTurn(format, *tools, required, false, "", "", OutputConstraint{}, **tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ConstraintCompiler compiler(**tokenizer, 151936, {*end_of_turn});
  const auto accepts = [&](const std::string& argument) {
    return AcceptsWholeTurn(compiler, plan->constraint, **tokenizer, *end_of_turn, "[f(" + argument + ")]");
  };
  for (int64_t n = -1200; n <= 1200; ++n) {
    ASSERT_EQ(accepts("n=" + std::to_string(n)), n >= -105 && n <= 1017) << n;
  }
  for (int64_t p = -10; p <= 5000; ++p) {  // bounds whose other digits are not all 0 / all 9
    ASSERT_EQ(accepts("p=" + std::to_string(p)), p >= 123 && p <= 4567) << p;
  }
  for (int64_t m : {-20, -1, 0, 7, 8, 9, 10, 99, 100, 123456789}) EXPECT_EQ(accepts("m=" + std::to_string(m)), m > 7) << m;
  for (int64_t k : {-123456789, -100, -10, -4, -3, -2, 0, 3, 10}) EXPECT_EQ(accepts("k=" + std::to_string(k)), k <= -4) << k;
  for (int64_t z : {-1, 0, 1}) EXPECT_EQ(accepts("z=" + std::to_string(z)), z == 0) << z;
  EXPECT_FALSE(accepts("n=-0")) << "no negative zero";
  EXPECT_FALSE(accepts("n=007")) << "no leading zeros";
  for (size_t length = 0; length <= 6; ++length) {
    EXPECT_EQ(accepts("s='" + std::string(length, 'x') + "'"), length >= 2 && length <= 4) << length;
    EXPECT_EQ(accepts("s=\"" + std::string(length, 'y') + "\""), length >= 2 && length <= 4) << length;
  }
  EXPECT_TRUE(accepts("s='\\n\\''")) << "an escape is one character";
  EXPECT_TRUE(accepts("s='\xc3\xa9\xc3\xa9'")) << "a character, not a byte";
}

// Pythonic calls (Llama 3.2's python list): the constraint of each tool_choice walked over accepted and refused
// turns (each accepted one must read back as calls), then sampled from a model at temperature 1: whatever the
// constraint lets through reads back as calls of the offered tools.
TEST(StructuredOutputToolCalls, PythonicCallsAreHeldToTheirSchemasAndReadBack) {
  ARACH_REQUIRE_FIXTURES();
  if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
  auto bundle = LoadModelBundle(testing::FixturePath("qwen3-tiny"), LoadModelOptions{});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  auto engine = Engine::Create(std::move(*bundle), EngineConfig{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  const Tokenizer& tokenizer = (*engine)->tokenizer();
  const std::optional<int32_t> end_of_turn = tokenizer.TokenToId("<|im_end|>");
  ASSERT_TRUE(end_of_turn.has_value());
  server::ChatOutputFormat format;
  format.tools = server::ToolCallSyntax::kPythonic;
  auto tools = server::ParseTools(nlohmann::json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
          "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
          "required": ["city"]}}},
      {"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  ConstraintCompiler compiler(tokenizer, (*engine)->model_config().vocab_size, {*end_of_turn});
  const auto plan_of = [&](server::ToolChoice::Mode mode, bool parallel) {
    server::ToolChoice choice;
    choice.mode = mode;
    if (mode == server::ToolChoice::Mode::kNamed) choice.name = "noop";
    return server::PlanChatTurn(format, *tools, choice, parallel, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
  };
  const auto accepts = [&](const server::ChatTurnPlan& plan, const std::string& text) {
    return AcceptsWholeTurn(compiler, plan.constraint, tokenizer, *end_of_turn, text);
  };
  struct Case {
    server::ToolChoice::Mode mode;
    bool parallel;
    std::vector<std::string> accepted, refused;
  };
  const std::vector<Case> cases = {
      {server::ToolChoice::Mode::kRequired, true,
       {"[get_weather(city='Paris')]", "[get_weather(city=\"Paris\", days=3), noop()]", "[get_weather(city='it\\'s', unit='celsius')]"},
       {"[get_weather(town='Paris')]", "[get_weather(days=3)]", "[get_weather(city=3)]", "[get_weather(city='x', unit='kelvin')]",
        "Sure.", "[]", "[get_weather(city='x')] and more"}},
      {server::ToolChoice::Mode::kRequired, false, {"[noop()]"}, {"[noop(), noop()]"}},
      {server::ToolChoice::Mode::kNamed, true, {"[noop()]", "[noop(a=1, b='x')]"}, {"[get_weather(city='x')]"}},
      {server::ToolChoice::Mode::kAuto, true,
       {"See [1] and [2].", "[get_weather(city='Paris'), noop()]", "[noop()]", "[noop(), get_weather(city='x', days=2)]"},
       {"[get_weather(city=1)]", "[noop(), get_weather(town='x')]", "[get_weather()]"}},
      {server::ToolChoice::Mode::kAuto, false, {"[noop()]", "Fine."}, {"[noop(), get_weather(city='x')]"}},
  };
  for (const Case& c : cases) {
    auto plan = plan_of(c.mode, c.parallel);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->constraint.active());
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(accepts(*plan, text)) << static_cast<int>(c.mode) << " parallel " << c.parallel << ": " << text;
      if (text.front() == '[') {
        EXPECT_TRUE(server::ParsePythonCalls(text).has_value()) << text;
      }
    }
    for (const std::string& text : c.refused) {
      EXPECT_FALSE(accepts(*plan, text)) << static_cast<int>(c.mode) << " parallel " << c.parallel << ": " << text;
    }
  }

  // A name the syntax cannot write is refused at once, naming the tool.
  for (const char* bad : {R"([{"type": "function", "function": {"name": "get-weather"}}])",
                          R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"user-id": {}}}}}])"}) {
    auto bad_tools = server::ParseTools(nlohmann::json::parse(bad), "tools");
    ASSERT_TRUE(bad_tools.ok());
    server::ToolChoice automatic;
    auto refused = server::PlanChatTurn(format, *bad_tools, automatic, true, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StartsWith(refused.status().message(), "tools[0]: ")) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "is not a Python identifier")) << refused.status();
  }

  auto required = plan_of(server::ToolChoice::Mode::kRequired, true);
  ASSERT_TRUE(required.ok());
  int read_back = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    EngineRequest r;
    r.prompt = *tokenizer.Encode("what is the weather", true);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.max_tokens = 120;
    r.constraint = required->constraint;
    auto observer = std::make_shared<CollectingObserver>();
    ASSERT_TRUE((*engine)->Submit(std::move(r), observer).ok());
    ASSERT_TRUE(observer->Wait());
    if (observer->finish().reason == FinishReason::kLength) continue;  // a long random string: cut off, not finished
    ASSERT_EQ(observer->finish().reason, FinishReason::kStop) << observer->text();
    server::ChatOutputParser parser(format, true, server::TurnStart::kOpen);
    server::ChatOutputDelta out = parser.Feed(observer->text());
    server::AppendDelta(out, parser.Finish());  // each call in one piece
    ASSERT_FALSE(out.tool_calls.empty()) << "the constraint let through what does not read back: " << observer->text();
    EXPECT_EQ(out.content, "") << observer->text();
    for (const server::ToolCallPiece& call : out.tool_calls) {
      EXPECT_TRUE(call.ends) << observer->text();
      const nlohmann::json arguments = nlohmann::json::parse(call.arguments);
      if (call.name == "get_weather") {
        EXPECT_TRUE(arguments["city"].is_string()) << observer->text();
        if (arguments.contains("days")) {
          EXPECT_TRUE(arguments["days"].is_number_integer()) << observer->text();
        }
      } else {
        EXPECT_EQ(call.name, "noop") << observer->text();
      }
    }
    ++read_back;
  }
  EXPECT_GT(read_back, 0) << "no sampled turn finished within its tokens";
}

// Mistral v11's calls, each [TOOL_CALLS]name[ARGS]{...}: the constraint of each tool_choice walked over accepted and
// refused turns; each accepted one reads back as the calls it holds.
TEST_F(MistralMarkers, V11CallsAreHeldToTheirSchemas) {
  const Tokenizer& tokenizer = this->tokenizer();
  server::ChatOutputFormat format;
  format.tools = server::ToolCallSyntax::kMistralV11;
  auto tools = server::ParseTools(nlohmann::json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
          "city": {"type": "string"}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  ConstraintCompiler compiler(tokenizer, engine().model_config().vocab_size, {end_of_turn_});
  struct Case {
    server::ToolChoice::Mode mode;
    bool parallel;
    std::vector<std::string> accepted, refused;
  };
  const std::string paris = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}";
  const std::vector<Case> cases = {
      {server::ToolChoice::Mode::kRequired, true,
       {paris, paris + "[TOOL_CALLS]noop[ARGS]{}", "[TOOL_CALLS]noop[ARGS]{ }"},
       {"[TOOL_CALLS]get_weather[ARGS]{\"town\": \"Paris\"}", "[TOOL_CALLS][{\"name\": \"noop\", \"arguments\": {}}]",
        "[TOOL_CALLS]noop{}", "Sure.", paris + " and more", "[TOOL_CALLS]other[ARGS]{}"}},
      {server::ToolChoice::Mode::kRequired, false, {paris}, {paris + "[TOOL_CALLS]noop[ARGS]{}"}},
      {server::ToolChoice::Mode::kNamed, true, {"[TOOL_CALLS]noop[ARGS]{}"}, {paris}},
      {server::ToolChoice::Mode::kAuto, true, {"Fine.", "Let me look." + paris, paris + "[TOOL_CALLS]noop[ARGS]{}"},
       {"[TOOL_CALLS]get_weather[ARGS]{}", "[TOOL_CALLS]nope[ARGS]{}"}},
  };
  for (const Case& c : cases) {
    server::ToolChoice choice;
    choice.mode = c.mode;
    if (c.mode == server::ToolChoice::Mode::kNamed) choice.name = "noop";
    auto plan = server::PlanChatTurn(format, *tools, choice, c.parallel, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->constraint.active());
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(AcceptsWholeTurn(compiler, plan->constraint, tokenizer, end_of_turn_, text))
          << static_cast<int>(c.mode) << " parallel " << c.parallel << ": " << text;
      server::ChatOutputParser parser(format, true, server::TurnStart::kOpen);
      server::ChatOutputDelta out = parser.Feed(text);
      server::AppendDelta(out, parser.Finish());
      const size_t calls = static_cast<size_t>(std::count(text.begin(), text.end(), '[')) / 2;  // [TOOL_CALLS] and [ARGS]
      EXPECT_EQ(out.tool_calls.size(), calls) << text;
    }
    for (const std::string& text : c.refused) {
      EXPECT_FALSE(AcceptsWholeTurn(compiler, plan->constraint, tokenizer, end_of_turn_, text))
          << static_cast<int>(c.mode) << " parallel " << c.parallel << ": " << text;
    }
  }
}

// Magistral's [THINK] and [/THINK] are special tokens: the text keeps them wherever the turn's reasoning is read (tools
// or not), and a turn that must call a tool may think first, in those markers.
TEST_F(MistralMarkers, ReasoningMarkersAreKeptAndComeBeforeTheCalls) {
  const Tokenizer& tokenizer = this->tokenizer();
  auto format = server::ResolveChatOutputFormat("[TOOL_CALLS]f[ARGS]{} [THINK]x[/THINK]", "auto", "auto");
  ASSERT_TRUE(format.ok()) << format.status();
  ASSERT_STREQ(format->ReasoningName(), "mistral");
  server::ToolChoice none;
  none.mode = server::ToolChoice::Mode::kNone;
  auto plain = server::PlanChatTurn(*format, {}, none, true, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->keep_special_tokens) << "the reasoning's markers are read out of the text";
  server::ChatOutputFormat hermes_think;  // <think> is text in this tokenizer: nothing to keep
  hermes_think.reasoning = true;
  auto other = server::PlanChatTurn(hermes_think, {}, none, true, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->keep_special_tokens);

  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice required;
  required.mode = server::ToolChoice::Mode::kRequired;
  auto plan = server::PlanChatTurn(*format, *tools, required, false, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->keep_special_tokens);
  ConstraintCompiler compiler(tokenizer, engine().model_config().vocab_size, {end_of_turn_});
  const std::string call = "[TOOL_CALLS]noop[ARGS]{}";
  for (const std::string& accepted : {call, "[THINK]The user wants noop.[/THINK]" + call, "[THINK]a[/THINK]\n\n" + call}) {
    EXPECT_TRUE(AcceptsWholeTurn(compiler, plan->constraint, tokenizer, end_of_turn_, accepted)) << accepted;
  }
  for (const std::string& refused : {"<think>a</think>" + call, std::string("[THINK]a[/THINK]Sure."), "[THINK]" + call}) {
    EXPECT_FALSE(AcceptsWholeTurn(compiler, plan->constraint, tokenizer, end_of_turn_, refused)) << refused;
  }
}

// tool_choice none: the tools stay in the prompt, no call is read or constrained, and where the syntax's opening
// marker is one token of the vocabulary (Qwen's added <tool_call>; Mistral's special [TOOL_CALLS], below) the plan bans it;
// a marker the tokenizer writes in pieces is text a turn may hold, left alone, and a request without tools bans nothing.
TEST(ToolChoiceNone, BansTheCallMarkerWhereItIsOneToken) {
  ARACH_REQUIRE_FIXTURES();
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice none;
  none.mode = server::ToolChoice::Mode::kNone;
  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;  // each model's, loaded once
  const auto banned = [&](const std::string& model, server::ToolCallSyntax syntax, bool with_tools) -> std::string {
    std::unique_ptr<Tokenizer>& tokenizer = tokenizers[model];
    if (tokenizer == nullptr) {
      auto loaded = LoadTokenizer(testing::FixturePath(model));
      EXPECT_TRUE(loaded.ok()) << loaded.status();
      if (!loaded.ok()) return "(no tokenizer)";
      tokenizer = std::move(*loaded);
    }
    server::ChatOutputFormat format;
    format.tools = syntax;
    auto plan = server::PlanChatTurn(format, with_tools ? *tools : std::vector<server::ToolSpec>{}, none, true, "", "",
                                     OutputConstraint{}, *tokenizer, "tools", "tool_choice");
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return "(no plan)";
    EXPECT_FALSE(plan->parse_tools);
    EXPECT_FALSE(plan->constraint.active());
    return plan->banned_call_marker;
  };
  EXPECT_EQ(banned("qwen3-tiny", server::ToolCallSyntax::kHermes, true), "<tool_call>");
  EXPECT_EQ(banned("qwen3-tiny", server::ToolCallSyntax::kHermes, false), "");
  EXPECT_EQ(banned("llama3-tiny", server::ToolCallSyntax::kLlama3Json, true), "") << "this Llama 3.0 vocabulary has no <|python_tag|>";
  EXPECT_EQ(banned("llama3-tiny", server::ToolCallSyntax::kHermes, true), "") << "<tool_call> is text in pieces there";
  EXPECT_EQ(banned("qwen3-tiny", server::ToolCallSyntax::kMistral, true), "") << "[TOOL_CALLS] is text in pieces there";
  EXPECT_EQ(banned("qwen3-tiny", server::ToolCallSyntax::kPythonic, true), "");
  EXPECT_EQ(banned("qwen3-tiny", server::ToolCallSyntax::kNone, true), "");
}

// The banned marker as the request's bad word keeps the model from opening a call even where it would at once (the
// marker's logit raised by 100, as a model trained to call would have it), in Qwen's added <tool_call> and Mistral's
// special [TOOL_CALLS]; without the ban the same request opens with the marker (so the bias does what it should).
TEST_F(MistralMarkers, ToolChoiceNoneKeepsTheModelFromOpeningACall) {
  auto qwen_bundle = LoadModelBundle(testing::FixturePath("qwen3-tiny"), LoadModelOptions{});
  ASSERT_TRUE(qwen_bundle.ok()) << qwen_bundle.status();
  auto qwen = Engine::Create(std::move(*qwen_bundle), EngineConfig{});
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  auto tools = server::ParseTools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "noop"}}])"), "tools");
  ASSERT_TRUE(tools.ok());
  server::ToolChoice none;
  none.mode = server::ToolChoice::Mode::kNone;
  struct Case {
    Engine* engine;
    server::ToolCallSyntax syntax;
    std::string marker;
  };
  for (const Case& c : {Case{qwen->get(), server::ToolCallSyntax::kHermes, "<tool_call>"},
                        Case{&engine(), server::ToolCallSyntax::kMistralV11, "[TOOL_CALLS]"}}) {
    SCOPED_TRACE(c.marker);
    const Tokenizer& tokenizer = c.engine->tokenizer();
    server::ChatOutputFormat format;
    format.tools = c.syntax;
    auto plan = server::PlanChatTurn(format, *tools, none, true, "", "", OutputConstraint{}, tokenizer, "tools", "tool_choice");
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->banned_call_marker, c.marker);
    const std::optional<int32_t> marker = tokenizer.TokenToId(c.marker);
    ASSERT_TRUE(marker.has_value());
    for (const bool ban : {false, true}) {
      EngineRequest r;
      r.prompt = *tokenizer.Encode("call noop", true);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 7;
      r.sampling.max_tokens = 8;
      r.sampling.skip_special_tokens = false;
      r.sampling.logit_bias = {{*marker, 100.0f}};
      if (ban) r.sampling.bad_words.push_back(plan->banned_call_marker);
      auto observer = std::make_shared<CollectingObserver>();
      ASSERT_TRUE(c.engine->Submit(std::move(r), observer).ok());
      ASSERT_TRUE(observer->Wait());
      const std::vector<int32_t> tokens = observer->tokens();
      ASSERT_FALSE(tokens.empty());
      const bool marker_written = std::find(tokens.begin(), tokens.end(), *marker) != tokens.end();
      EXPECT_EQ(marker_written, !ban) << observer->text();
    }
  }
}

}  // namespace
}  // namespace arach
