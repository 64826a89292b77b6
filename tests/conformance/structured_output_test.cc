// Structured output in the engine, on fixture models with real tokenizers (GPT-2's byte-level BPE, Qwen's,
// and the SentencePiece-style Llama 2 vocabulary of llama-stories260k): random-weight models sampled at
// temperature 1 are the hardest users a constraint has, so every output that finishes with `stop` must match
// because of the mask alone. Also: compile errors name the field, a preempted constrained sequence stays valid,
// max_tokens ends a constrained output with `length`.
#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::CollectingObserver;

#define REQUIRE_STRUCTURED_OUTPUT()                                                                           \
  do {                                                                                                        \
    if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend(); \
  } while (0)

struct Outcome {
  std::string text;
  FinishInfo finish;
};

// Runs `count` seeded temperature-1 samples of `constraint` side by side and returns them; `predictions[i]`, where
// given, is sample i's prediction (speculative decoding).
std::vector<Outcome> Sample(Engine& engine, const OutputConstraint& constraint, int count, int max_tokens, uint64_t seed = 1,
                            const std::vector<std::vector<int32_t>>& predictions = {}) {
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  const std::vector<int32_t> prompt = *engine.tokenizer().Encode("The answer is", true);
  for (int i = 0; i < count; ++i) {
    EngineRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed + static_cast<uint64_t>(i);
    r.sampling.max_tokens = max_tokens;
    r.constraint = constraint;
    if (static_cast<size_t>(i) < predictions.size()) r.prediction = predictions[i];
    observers.push_back(std::make_shared<CollectingObserver>());
    EXPECT_TRUE(engine.Submit(std::move(r), observers.back()).ok());
  }
  std::vector<Outcome> outcomes;
  for (auto& o : observers) {
    EXPECT_TRUE(o->Wait());
    outcomes.push_back({o->text(), o->finish()});
  }
  return outcomes;
}

class StructuredOutput : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    REQUIRE_STRUCTURED_OUTPUT();
    engine_ = testing::MakeFixtureEngine(GetParam());
    ASSERT_NE(engine_, nullptr);
  }
  std::unique_ptr<Engine> engine_;
};

TEST_P(StructuredOutput, EveryRegexOutputMatches) {
  auto c = OutputConstraint::Regex(R"([a-z]{2,6}-[0-9]{2,3}( \(ok\))?)");
  const std::regex re(c.text);
  int stopped = 0;
  for (const Outcome& o : Sample(*engine_, c, 8, 48)) {
    if (o.finish.reason != FinishReason::kStop) continue;
    ++stopped;
    EXPECT_TRUE(std::regex_match(o.text, re)) << "'" << o.text << "'";
  }
  EXPECT_GT(stopped, 0) << "no output completed its regex within 48 tokens";
}

TEST_P(StructuredOutput, EveryChoiceOutputIsOneOfTheChoices) {
  auto c = OutputConstraint::Choice({"positive", "negative", "neutral \"quoted\"", "ünïcödé ✓"});
  const std::set<std::string> allowed(c.choices.begin(), c.choices.end());
  for (const Outcome& o : Sample(*engine_, c, 8, 32)) {
    ASSERT_EQ(o.finish.reason, FinishReason::kStop) << o.text;
    EXPECT_TRUE(allowed.count(o.text)) << "'" << o.text << "'";
  }
}

TEST_P(StructuredOutput, EveryJsonSchemaOutputValidates) {
  auto c = OutputConstraint::JsonSchema(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 8},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
      "address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                  "required": ["zip"], "additionalProperties": false}
    },
    "required": ["name", "age", "address"],
    "additionalProperties": false})");
  int stopped = 0;
  for (const Outcome& o : Sample(*engine_, c, 6, 160)) {
    if (o.finish.reason != FinishReason::kStop) continue;
    ++stopped;
    const nlohmann::json j = nlohmann::json::parse(o.text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << o.text;
    ASSERT_TRUE(j.is_object()) << o.text;
    for (const auto& [key, value] : j.items()) {
      EXPECT_TRUE(key == "name" || key == "age" || key == "tags" || key == "address") << key;
    }
    ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << o.text;
    EXPECT_LE(j["name"].get<std::string>().size(), 8u * 4);  // maxLength counts characters; bytes <= 4 each
    ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer()) << o.text;
    EXPECT_GE(j["age"].get<int>(), 0);
    EXPECT_LE(j["age"].get<int>(), 120);
    if (j.contains("tags")) {
      ASSERT_TRUE(j["tags"].is_array());
      EXPECT_LE(j["tags"].size(), 3u);
      for (const auto& t : j["tags"]) EXPECT_TRUE(t == "a" || t == "b") << o.text;
    }
    ASSERT_TRUE(j["address"].is_object()) << o.text;
    EXPECT_EQ(j["address"].size(), 1u) << o.text;
    EXPECT_TRUE(std::regex_match(j["address"]["zip"].get<std::string>(), std::regex("[0-9]{5}"))) << o.text;
  }
  EXPECT_GT(stopped, 0) << "no JSON output completed within 160 tokens";
}

// Drafts never reach the constraint: each emitted token is sampled under the mask and accepted as without them.
TEST_P(StructuredOutput, APredictionChangesNoConstrainedOutput) {
  auto c = OutputConstraint::JsonSchema(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
    "n": {"type": "integer"}}, "required": ["name", "n"], "additionalProperties": false})");
  const std::vector<Outcome> plain = Sample(*engine_, c, 4, 64, /*seed=*/7);
  std::vector<std::vector<int32_t>> predictions;
  for (const Outcome& o : plain) predictions.push_back(*engine_->tokenizer().Encode(o.text, false));
  predictions[1].insert(predictions[1].begin() + predictions[1].size() / 2, predictions[0].begin(), predictions[0].end());  // an edit
  const std::vector<Outcome> predicted = Sample(*engine_, c, 4, 64, /*seed=*/7, predictions);
  int kept = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(predicted[i].text, plain[i].text) << i;
    EXPECT_EQ(predicted[i].finish.reason, plain[i].finish.reason) << i;
    kept += predicted[i].finish.usage.accepted_draft_tokens;
  }
  EXPECT_GT(kept, 0);
}

TEST_P(StructuredOutput, AGrammarOutputIsInItsLanguage) {
  // A finite language: once an output is as long as the grammar allows, only the end may follow, so every
  // output completes (the constraint ends the sequence even where the model would go on).
  auto c = OutputConstraint::Grammar(R"ebnf(root ::= term (op term)? (op term)?
op ::= "+" | "-"
term ::= num | "(" num op num ")"
num ::= [1-9] [0-9]?)ebnf");
  const std::string num = "[1-9][0-9]?", term = "(" + num + "|\\(" + num + "[-+]" + num + "\\))";
  const std::regex language(term + "([-+]" + term + "){0,2}");
  for (const Outcome& o : Sample(*engine_, c, 8, 32)) {
    EXPECT_EQ(o.finish.reason, FinishReason::kStop) << o.text;
    EXPECT_TRUE(std::regex_match(o.text, language)) << "'" << o.text << "'";
  }
}

TEST_P(StructuredOutput, MaxTokensEndsAnUnfinishedOutputWithLength) {
  auto c = OutputConstraint::JsonSchema(R"({"type": "object", "properties": {"text": {"type": "string", "minLength": 50}}, "required": ["text"]})");
  for (const Outcome& o : Sample(*engine_, c, 2, 4)) {
    EXPECT_EQ(o.finish.reason, FinishReason::kLength);
    EXPECT_EQ(o.finish.usage.completion_tokens, 4);
    EXPECT_EQ(o.text.substr(0, 1), "{") << o.text;
  }
}

// ignore_eos leaves the request no stop token of its own: a complete constraint still ends the output.
TEST_P(StructuredOutput, IgnoreEosStillEndsACompleteOutput) {
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    EngineRequest r;
    r.prompt = *engine_->tokenizer().Encode("x", true);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 40;
    r.constraint = OutputConstraint::Regex("[0-9]{3}");
    observers.push_back(std::make_shared<CollectingObserver>());
    ASSERT_TRUE(engine_->Submit(std::move(r), observers.back()).ok());
  }
  for (auto& o : observers) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->finish().reason, FinishReason::kStop) << o->finish().status;
    EXPECT_TRUE(std::regex_match(o->text(), std::regex("[0-9]{3}"))) << o->text();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, StructuredOutput, ::testing::Values("gpt2-tiny", "qwen3-tiny", "llama-stories260k"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(StructuredOutputErrors, CompileErrorsNameTheFieldAndTheReason) {
  ARACH_REQUIRE_FIXTURES();
  REQUIRE_STRUCTURED_OUTPUT();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  auto submit = [&](OutputConstraint c) {
    EngineRequest r;
    r.prompt = {1, 2, 3};
    r.constraint = std::move(c);
    return engine->Submit(std::move(r), std::make_shared<CollectingObserver>()).status();
  };
  absl::Status s = submit(OutputConstraint::JsonSchema(R"({"type": "object", "properties": )"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("constraint: "), std::string::npos) << s;
  s = submit(OutputConstraint::JsonSchema(R"({"type": )" + std::string(5000, 'x') + "}"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  {
    // xgrammar's reason without its assertion wording, the copy of the input it appends, and at most 400 bytes of
    // it ("near: " quotes the rest of the line), never the 5000 bytes of input.
    const std::string prefix = "constraint: the json_schema cannot be compiled: ";
    const std::string message(s.message());
    EXPECT_EQ(message.rfind(prefix + "Failed to parse JSON: syntax error at line 1 near: xxx", 0), 0u) << message;
    EXPECT_LE(message.size(), prefix.size() + 403) << message;
    EXPECT_TRUE(absl::EndsWith(message, "...")) << message;
    EXPECT_EQ(message.find("Check failed"), std::string::npos) << message;
    EXPECT_EQ(message.find("The JSON string is"), std::string::npos) << message;
  }
  // Refused before xgrammar's recursive parser sees it: 100,000 nested lists overflowed its stack.
  s = submit(OutputConstraint::JsonSchema(std::string(100000, '[')));
  EXPECT_EQ(std::string(s.message()), "constraint: nests lists and objects deeper than 64 levels");
  s = submit(OutputConstraint::StructuralTag(std::string(100000, '{')));
  EXPECT_EQ(std::string(s.message()), "constraint: nests lists and objects deeper than 64 levels");
  // A schema that only refers to itself compiles but accepts no text: refused at submission, not sampled from an
  // empty mask (which ended the stream in INTERNAL "refused token ... that its own mask allowed").
  s = submit(OutputConstraint::JsonSchema(R"({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(std::string(s.message()), "constraint: allows no next token: no text the model's vocabulary can spell matches it");
  s = submit(OutputConstraint::Regex("([a-z"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("constraint: the regex cannot be compiled"), std::string::npos) << s;
  s = submit(OutputConstraint::Grammar("root ::= undefined_rule"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = submit(OutputConstraint::Choice({}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = submit(OutputConstraint::Regex(std::string(kMaxConstraintBytes + 1, 'a')));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("exceed the limit"), std::string::npos) << s;
  EXPECT_EQ(engine->stats().num_waiting, 0) << "a refused request queues nothing";
}

TEST(StructuredOutputErrors, AScoreRequestCannotBeConstrained) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  EngineRequest r;
  r.kind = RequestKind::kScore;
  r.prompt = {1, 2, 3};
  r.constraint = OutputConstraint::Regex("a");
  const absl::Status s = engine->Submit(std::move(r), std::make_shared<CollectingObserver>()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(StructuredOutputErrors, WithoutXgrammarAConstraintIsUnimplemented) {
  ARACH_REQUIRE_FIXTURES();
  if (StructuredOutputAvailable()) GTEST_SKIP() << "this build has structured output";
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  EngineRequest r;
  r.prompt = {1, 2, 3};
  r.constraint = OutputConstraint::Regex("a");
  const absl::Status s = engine->Submit(std::move(r), std::make_shared<CollectingObserver>()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
}

// Many constrained sequences and a KV cache too small for all of them: preempted sequences are computed again
// and go on where their constraint stood (they keep their tokens; only the K/V is rebuilt).
TEST(StructuredOutputPreemption, PreemptedSequencesStayValid) {
  ARACH_REQUIRE_FIXTURES();
  REQUIRE_STRUCTURED_OUTPUT();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", EngineConfig{}, /*kv_blocks=*/12);
  ASSERT_NE(engine, nullptr);
  auto c = OutputConstraint::Regex(R"(([a-z]+ ){10,20}end\.)");
  const std::regex re(c.text);
  int preemptions = 0;
  for (const Outcome& o : Sample(*engine, c, 10, 60, 77)) {
    preemptions += o.finish.usage.preemptions;
    if (o.finish.reason == FinishReason::kStop) {
      EXPECT_TRUE(std::regex_match(o.text, re)) << "'" << o.text << "'";
    } else {
      EXPECT_EQ(o.finish.reason, FinishReason::kLength);
    }
  }
  EXPECT_GT(preemptions, 0) << "the test meant to preempt";
}

}  // namespace
}  // namespace arach
