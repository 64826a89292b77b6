// Speculative decoding on the fixture models (engine_drafts.cc): a request's prediction, or prompt lookup, only
// changes how many steps its output takes. Every test compares an output with drafts to the same request's output
// without them: the same tokens, text, log-probs and finish, under every variant, greedy and seeded sampling with
// penalties, stop rules, and a loaded engine that trims and preempts drafts.
#include <random>

#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::CollectingObserver;

struct Generation {
  std::vector<int32_t> tokens;
  std::vector<StreamChunk> chunks;
  std::string text;
  FinishInfo finish;
  int64_t steps = 0;  // the engine's steps while it ran alone
};

Generation Generate(Engine& engine, const EngineRequest& request) {
  const int64_t steps_before = testing::IdleStats(engine).steps;
  auto observer = std::make_shared<CollectingObserver>();
  Generation run;
  const absl::StatusOr<uint64_t> id = engine.Submit(request, observer);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok() || !observer->Wait()) return run;
  run.tokens = observer->tokens();
  run.chunks = observer->chunks();
  run.text = observer->text();
  run.finish = observer->finish();
  run.steps = testing::IdleStats(engine).steps - steps_before;
  return run;
}

// Submits `requests` at once and waits for them all; their observers in order.
std::vector<std::shared_ptr<CollectingObserver>> RunTogether(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  for (const EngineRequest& request : requests) {
    observers.push_back(std::make_shared<CollectingObserver>());
    const absl::StatusOr<uint64_t> id = engine.Submit(request, observers.back());
    EXPECT_TRUE(id.ok()) << id.status();
  }
  for (auto& observer : observers) EXPECT_TRUE(observer->Wait());
  return observers;
}

void ExpectSameOutput(const Generation& with_drafts, const Generation& without) {
  EXPECT_EQ(with_drafts.tokens, without.tokens);
  EXPECT_EQ(with_drafts.text, without.text);
  EXPECT_EQ(with_drafts.finish.reason, without.finish.reason);
  EXPECT_EQ(with_drafts.finish.stop_string, without.finish.stop_string);
  EXPECT_EQ(with_drafts.finish.usage.completion_tokens, without.finish.usage.completion_tokens);
}

EngineRequest Greedy(const std::vector<int32_t>& val, int start, int prompt_len, int max_tokens) {
  EngineRequest request;
  request.prompt.assign(val.begin() + start, val.begin() + start + prompt_len);
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = max_tokens;
  request.sampling.ignore_eos = true;
  return request;
}

struct ModelVariant {
  std::string model;
  Variant variant;
};

std::string CaseName(const ::testing::TestParamInfo<ModelVariant>& info) {
  std::string name = info.param.model + "_" + info.param.variant.Name();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// Each test: an engine on the parameter's model, prompts cut from the validation text, requests of its variant.
class PredictedOutputs : public ::testing::TestWithParam<ModelVariant> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    engine_ = testing::MakeFixtureEngine(GetParam().model);
    ASSERT_NE(engine_, nullptr);
    val_ = testing::ValidationTokens(engine_->tokenizer());
  }
  EngineRequest Request(int start, int prompt_len, int max_tokens) const {
    EngineRequest request = Greedy(val_, start, prompt_len, max_tokens);
    request.variant = GetParam().variant;
    return request;
  }
  std::unique_ptr<Engine> engine_;
  std::vector<int32_t> val_;
};

TEST_P(PredictedOutputs, ARightPredictionGivesTheSameTokensInFewerSteps) {
  EngineRequest request = Request(100, 20, 40);
  const Generation plain = Generate(*engine_, request);
  ASSERT_EQ(plain.tokens.size(), 40u);
  EXPECT_EQ(plain.finish.usage.draft_tokens, 0);
  request.prediction = plain.tokens;
  const Generation predicted = Generate(*engine_, request);
  ExpectSameOutput(predicted, plain);
  // The first token comes from the prompt's step; then 8 drafts and one more token a step.
  EXPECT_EQ(predicted.finish.usage.accepted_draft_tokens, predicted.finish.usage.draft_tokens);
  EXPECT_GE(predicted.finish.usage.accepted_draft_tokens, 32);
  EXPECT_LE(predicted.steps, 6) << "without drafts: " << plain.steps;
  EXPECT_EQ(plain.steps, 40);
}

TEST_P(PredictedOutputs, AnEditedPredictionStillSavesStepsAndChangesNothing) {
  EngineRequest request = Request(300, 12, 48);
  const Generation plain = Generate(*engine_, request);
  ASSERT_EQ(plain.tokens.size(), 48u);
  // An edit: tokens 15..17 replaced, five tokens inserted after 30, the last six missing.
  std::vector<int32_t> edited(plain.tokens.begin(), plain.tokens.begin() + 42);
  for (int i = 15; i < 18; ++i) edited[i] = val_[i];
  edited.insert(edited.begin() + 30, val_.begin(), val_.begin() + 5);
  request.prediction = edited;
  const Generation predicted = Generate(*engine_, request);
  ExpectSameOutput(predicted, plain);
  EXPECT_GE(predicted.finish.usage.accepted_draft_tokens, 24);
  EXPECT_LT(predicted.finish.usage.accepted_draft_tokens, predicted.finish.usage.draft_tokens);
  EXPECT_LT(predicted.steps, plain.steps / 2);
}

TEST_P(PredictedOutputs, SeededSamplingWithPenaltiesDrawsTheSameTokensAndLogprobs) {
  EngineRequest request = Request(500, 16, 40);
  request.sampling.temperature = 0.7f;
  request.sampling.top_k = 40;
  request.sampling.top_p = 0.95f;
  request.sampling.seed = 11;
  request.sampling.frequency_penalty = 0.3f;
  request.sampling.presence_penalty = 0.2f;
  request.sampling.repetition_penalty = 1.1f;
  request.sampling.logprobs = true;
  request.sampling.top_logprobs = 3;
  const Generation plain = Generate(*engine_, request);
  request.prediction = plain.tokens;
  const Generation predicted = Generate(*engine_, request);
  ExpectSameOutput(predicted, plain);
  EXPECT_GE(predicted.finish.usage.accepted_draft_tokens, 24);
  std::vector<SampledToken> a, b;
  for (const StreamChunk& chunk : plain.chunks) a.insert(a.end(), chunk.tokens.begin(), chunk.tokens.end());
  for (const StreamChunk& chunk : predicted.chunks) b.insert(b.end(), chunk.tokens.begin(), chunk.tokens.end());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i].logprob, b[i].logprob, 1e-4) << i;
    ASSERT_EQ(a[i].top.size(), 3u);
    ASSERT_EQ(b[i].top.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(a[i].top[k].token, b[i].top[k].token) << i << ", " << k;
  }
}

TEST_P(PredictedOutputs, StopRulesEndTheOutputWhereTheyEndItWithoutDrafts) {
  EngineRequest request = Request(700, 10, 30);
  const Generation full = Generate(*engine_, request);
  ASSERT_EQ(full.tokens.size(), 30u);
  for (const int max_tokens : {1, 2, 9, 10, 11, 19}) {  // ends before, on and after a step's last draft
    SCOPED_TRACE(max_tokens);
    EngineRequest shorter = request;
    shorter.sampling.max_tokens = max_tokens;
    const Generation plain = Generate(*engine_, shorter);
    shorter.prediction = full.tokens;
    ExpectSameOutput(Generate(*engine_, shorter), plain);
  }
  // A stop token inside a step's drafts, and a stop string.
  EngineRequest stopped = request;
  stopped.sampling.stop_token_ids = {full.tokens[13]};
  const Generation plain_token = Generate(*engine_, stopped);
  stopped.prediction = full.tokens;
  ExpectSameOutput(Generate(*engine_, stopped), plain_token);
  EngineRequest stop_string = request;
  const absl::StatusOr<std::string> piece = engine_->tokenizer().Decode(std::vector<int32_t>(full.tokens.begin() + 16, full.tokens.begin() + 18), true);
  ASSERT_TRUE(piece.ok());
  stop_string.sampling.stop = {*piece};
  const Generation plain_string = Generate(*engine_, stop_string);
  EXPECT_EQ(plain_string.finish.stop_string, *piece);
  stop_string.prediction = full.tokens;
  ExpectSameOutput(Generate(*engine_, stop_string), plain_string);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PredictedOutputs,
                         ::testing::Values(ModelVariant{"gpt2-tiny", {}}, ModelVariant{"gpt2-tiny", {.arach = true}},
                                           ModelVariant{"gpt2-tiny", {.skip = true}},
                                           ModelVariant{"gpt2-tiny", {.arach = true, .skip = true}},
                                           ModelVariant{"qwen3-tiny", {}}, ModelVariant{"qwen3-tiny", {.arach = true}},
                                           ModelVariant{"llama3-tiny", {.arach = true}}),
                         CaseName);

// Prompt lookup: drafts from the sequence itself, for every request of an engine that enables it.
TEST(PromptLookup, RepeatedTextIsDraftedFromTheSequenceAndTheOutputIsUnchanged) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig lookup;
  lookup.prompt_lookup_tokens = 6;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  auto lookup_engine = testing::MakeFixtureEngine("gpt2-tiny", lookup);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(lookup_engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  for (const bool sampled : {false, true}) {
    SCOPED_TRACE(sampled);
    EngineRequest request = Greedy(val, 900, 40, 160);
    // The passage twice, then its start again: a model that continues it quotes the earlier text.
    request.prompt.insert(request.prompt.end(), val.begin() + 900, val.begin() + 940);
    request.prompt.insert(request.prompt.end(), val.begin() + 900, val.begin() + 905);
    if (sampled) {
      request.sampling.temperature = 0.8f;
      request.sampling.seed = 3;
    }
    const Generation plain = Generate(*engine, request);
    const Generation looked_up = Generate(*lookup_engine, request);
    ExpectSameOutput(looked_up, plain);
    std::printf("prompt lookup: %d drafts, %d kept, %lld steps (%lld without)\n", looked_up.finish.usage.draft_tokens,
                looked_up.finish.usage.accepted_draft_tokens, static_cast<long long>(looked_up.steps), static_cast<long long>(plain.steps));
    EXPECT_GT(looked_up.finish.usage.draft_tokens, 0);
    if (!sampled) {  // the greedy output repeats itself; sampled at 0.8 it rarely does (drafts then pause: DraftLength)
      EXPECT_GT(looked_up.finish.usage.accepted_draft_tokens, 0);
      EXPECT_LT(looked_up.steps, plain.steps / 2);
    }
  }
  const EngineStats stats = testing::IdleStats(*lookup_engine);
  EXPECT_GT(stats.draft_tokens, 0);
  EXPECT_GT(stats.accepted_draft_tokens, 0);
  EXPECT_LE(stats.accepted_draft_tokens, stats.draft_tokens);
}

// Many requests at once on a small engine (24 tokens a step, a KV pool that forces preemptions): drafts are trimmed
// to the step's budget, dropped where blocks run out or a sequence is preempted; each output equals its output alone.
TEST(PredictedOutputsUnderLoad, EveryOutputEqualsItsOutputAlone) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig small;
  small.max_num_batched_tokens = 24;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", small, /*kv_blocks=*/8);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  std::mt19937 rng(17);
  std::vector<EngineRequest> requests;
  std::vector<Generation> alone;
  for (int i = 0; i < 12; ++i) {
    EngineRequest request = Greedy(val, static_cast<int>(rng() % 1000), 4 + static_cast<int>(rng() % 30), 16 + static_cast<int>(rng() % 24));
    request.variant.arach = i % 2 == 1;
    request.variant.skip = (i / 2) % 2 == 1;
    if (i % 3 == 0) {
      request.sampling.temperature = 0.9f;
      request.sampling.seed = 100 + i;
    }
    alone.push_back(Generate(*engine, request));
    request.prediction = alone.back().tokens;
    if (i % 4 == 1) request.prediction.erase(request.prediction.begin() + 5, request.prediction.begin() + 8);  // an edit
    requests.push_back(request);
  }
  const EngineStats before = testing::IdleStats(*engine);
  const std::vector<std::shared_ptr<CollectingObserver>> observers = RunTogether(*engine, requests);
  for (size_t i = 0; i < observers.size(); ++i) {
    EXPECT_EQ(observers[i]->tokens(), alone[i].tokens) << "request " << i << " " << requests[i].variant.Name();
    EXPECT_EQ(observers[i]->text(), alone[i].text) << "request " << i;
  }
  const EngineStats after = testing::IdleStats(*engine);
  EXPECT_EQ(after.kv_blocks_used, 0);
  EXPECT_GT(after.accepted_draft_tokens - before.accepted_draft_tokens, 0);
  EXPECT_GT(after.preemptions - before.preemptions, 0) << "the pool was meant to be too small for every sequence at once";
}

// speculative_disable_by_batch_size: no drafts while that many sequences run; alone, the same request drafts.
TEST(PredictedOutputsUnderLoad, DraftsStopAtTheBatchSizeThatDisablesThem) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.speculative_disable_by_batch_size = 2;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", config);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  std::vector<EngineRequest> requests = {Greedy(val, 40, 8, 24), Greedy(val, 80, 8, 24)};
  for (EngineRequest& request : requests) {
    request.prediction = Generate(*engine, request).tokens;
    EXPECT_GT(Generate(*engine, request).finish.usage.accepted_draft_tokens, 0) << "alone, it drafts";
  }
  // A longer generation runs beside them from before they come to after they end, so that no step ever has fewer
  // than two sequences whatever the threads' timing (submitted together, one of them alone could decode a step
  // before the other arrived on a loaded machine).
  auto beside = std::make_shared<CollectingObserver>();
  const absl::StatusOr<uint64_t> beside_id = engine->Submit(Greedy(val, 120, 8, 240), beside);
  ASSERT_TRUE(beside_id.ok()) << beside_id.status();
  const std::vector<std::shared_ptr<CollectingObserver>> observers = RunTogether(*engine, requests);
  EXPECT_EQ(beside->finish_count(), 0) << "the generation beside them outlived them";
  engine->Cancel(*beside_id);
  ASSERT_TRUE(beside->Wait());
  for (size_t i = 0; i < observers.size(); ++i) {
    EXPECT_EQ(observers[i]->tokens(), requests[i].prediction);
    EXPECT_EQ(observers[i]->finish().usage.draft_tokens, 0) << "request " << i << ": never alone in a step";
  }
}

TEST(PredictedOutputsValidation, APredictionIsRefusedWhereItCannotApply) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  EngineRequest request;
  request.prompt = {1, 2, 3};
  request.prediction = {1, engine->model_config().vocab_size};
  absl::StatusOr<uint64_t> refused = engine->Submit(request, std::make_shared<CollectingObserver>());
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
  EXPECT_NE(refused.status().message().find("prediction"), std::string::npos) << refused.status();
  request.prediction = {1, 2};
  request.kind = RequestKind::kScore;
  refused = engine->Submit(request, std::make_shared<CollectingObserver>());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("prediction"), std::string::npos) << refused.status();
}

}  // namespace
}  // namespace arach
