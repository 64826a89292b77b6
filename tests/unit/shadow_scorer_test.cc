// The shadow scorer's parts: the comparison of a served generation with the other variant's scores, which
// variant a request is compared against, and the bound on shadow work (dropped and counted beyond it,
// checked deterministically by finishing requests on the engine's own step thread, where no shadow score
// can complete in between).
#include "server/shadow_scorer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/test_models.h"

namespace arach::server {
namespace {

Variant Arach(float offset = Variant::kDefaultArachOffset) {
  Variant v;
  v.arach = true;
  v.arach_offset = offset;
  return v;
}

TEST(ShadowScorer, ComparesTheCompletionPositionsOnly) {
  KeptGeneration served;
  served.sequence = {5, 6, 7, 8, 9};  // prompt 5 6, then 7 8 9
  served.prompt_len = 2;
  served.raw_logprobs = {-1.0f, -2.0f, -0.5f};
  served.argmax = {7, 3, 9};
  FinishInfo against;
  against.prompt_logprobs = {-9.0f /* 6 | 5: prompt, ignored */, -1.5f, -2.0f, -1.0f};
  against.prompt_argmax = {1, 7, 4, 9};
  absl::StatusOr<ShadowComparison> c = CompareShadow(served, against);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tokens, 3);
  EXPECT_NEAR(c->logprob_delta, ((-1.0 - 2.0 - 0.5) - (-1.5 - 2.0 - 1.0)) / 3.0, 1e-12);
  EXPECT_NEAR(c->top1_agreement, 2.0 / 3.0, 1e-12);
  against.prompt_argmax.pop_back();
  EXPECT_EQ(CompareShadow(served, against).status().code(), absl::StatusCode::kInternal);
}

TEST(ShadowScorer, TheOtherVariantIsTheFlagElseTheExperimentsOtherArmElseBase) {
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create();
  const ShadowScorer plain(ShadowOptions{}, {}, *metrics);
  EXPECT_EQ(plain.AgainstFor(Arach()), Variant{});
  const ShadowScorer experiment(ShadowOptions{}, {Variant{}, Arach(-1.0f)}, *metrics);
  EXPECT_EQ(experiment.AgainstFor(Arach(-1.0f)), Variant{});
  EXPECT_EQ(experiment.AgainstFor(Variant{}), Arach(-1.0f));
  Variant skip;
  skip.skip = true;
  const ShadowScorer explicit_variant(ShadowOptions{skip, 8}, {Variant{}, Arach()}, *metrics);
  EXPECT_EQ(explicit_variant.AgainstFor(Arach()), skip);
}

// Finishes like a server observer: hands the finished request to the shadow scorer `copies` times.
class ShadowingObserver : public testing::CollectingObserver {
 public:
  ShadowingObserver(ShadowScorer& scorer, Engine*& engine, int copies) : scorer_(scorer), engine_(engine), copies_(copies) {}
  void OnFinish(const FinishInfo& info) override {
    for (int i = 0; i < copies_; ++i) scorer_.OnFinished(*engine_, Arach(), info);
    CollectingObserver::OnFinish(info);
  }

 private:
  ShadowScorer& scorer_;
  Engine*& engine_;
  int copies_;
};

TEST(ShadowScorer, WorkBeyondTheBoundIsDroppedAndCounted) {
  LoadModelOptions load;
  load.kv_blocks = 64;
  absl::StatusOr<std::unique_ptr<Engine>> created = testing::MakeTinyRandomEngine(load);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Engine> engine = std::move(*created);
  Engine* engine_ptr = engine.get();
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create();
  ShadowScorer scorer(ShadowOptions{std::nullopt, /*max_in_flight=*/1}, {}, *metrics);

  EngineRequest request;
  request.prompt = {17, 4, 250, 9, 33, 101, 7};
  request.sampling.max_tokens = 3;
  request.sampling.ignore_eos = true;
  request.variant = Arach();
  request.keep_generated = true;
  auto observer = std::make_shared<ShadowingObserver>(scorer, engine_ptr, 3);
  ASSERT_TRUE(engine->Submit(request, observer).ok());
  ASSERT_TRUE(observer->Wait());
  ASSERT_TRUE(observer->finish().generated.has_value());
  EXPECT_EQ(observer->finish().generated->raw_logprobs.size(), 3u);

  auto parsed = [&] {
    auto text = testing::ParsePrometheusText(metrics->Scrape());
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : testing::PrometheusText{};
  };
  // The first copy was queued; the step thread was busy in this observer, so the other two found the bound full.
  EXPECT_EQ(parsed().Value("arach_shadow_dropped_total", "reason=\"saturated\""), 2);
  for (int i = 0; i < 1000 && scorer.in_flight() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(scorer.in_flight(), 0);
  EXPECT_EQ(parsed().Value("arach_shadow_logprob_delta_count", "against=\"base\",variant=\"arach\""), 1);
  engine->Shutdown();
}

// The prompt tokens a base-variant generation of `prompt` with `cache_salt` found in the engine's prefix cache.
int CachedTokensOf(Engine& engine, const std::vector<int32_t>& prompt, const std::string& cache_salt) {
  EngineRequest request;
  request.prompt = prompt;
  request.sampling.max_tokens = 1;
  request.cache_salt = cache_salt;
  auto observer = std::make_shared<testing::CollectingObserver>();
  EXPECT_TRUE(engine.Submit(request, observer).ok());
  EXPECT_TRUE(observer->Wait());
  return observer->finish().usage.cached_prompt_tokens;
}

TEST(ShadowScorer, ScoresInTheServedRequestsPrefixCacheNamespace) {
  LoadModelOptions load;
  load.kv_blocks = 64;
  load.block_size = 4;
  absl::StatusOr<std::unique_ptr<Engine>> created = testing::MakeTinyRandomEngine(load);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Engine> engine = std::move(*created);
  Engine* engine_ptr = engine.get();
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create();
  ShadowScorer scorer(ShadowOptions{}, {}, *metrics);  // an arach generation is scored under base

  EngineRequest request;
  request.prompt = {17, 4, 250, 9, 33, 101, 7, 80};
  request.sampling.max_tokens = 4;
  request.sampling.ignore_eos = true;
  request.variant = Arach();
  request.keep_generated = true;
  request.cache_salt = "tenant salt";
  auto observer = std::make_shared<ShadowingObserver>(scorer, engine_ptr, 1);
  ASSERT_TRUE(engine->Submit(request, observer).ok());
  ASSERT_TRUE(observer->Wait());
  for (int i = 0; i < 1000 && scorer.in_flight() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(scorer.in_flight(), 0);
  // The shadow score computed the served sequence (12 tokens) under base: its blocks are found with the salt only.
  const std::vector<int32_t> sequence = observer->finish().generated->sequence;
  ASSERT_EQ(sequence.size(), 12u);
  EXPECT_EQ(CachedTokensOf(*engine, sequence, ""), 0);
  EXPECT_EQ(CachedTokensOf(*engine, sequence, "tenant salt"), 8);
  engine->Shutdown();
}

}  // namespace
}  // namespace arach::server
