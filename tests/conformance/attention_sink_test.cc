// Attention-sink diagnostics through the serving engine against ../shared/fixtures/refs/sink_refs.json
// (an independent PyTorch forward): per layer and head, the mean probability of the prompt's query rows
// on position 0 and on their own hub, base and ARACH (b = -0.5, the references' hub embedding), within
// 1e-4. Also: the same numbers when the prompt is computed in small chunks beside other requests, for a
// generation request whose prompt is in the prefix cache, and after the prompt was preempted.
#include "engine/core/mapped_file.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::CollectingObserver;

const nlohmann::json& SinkRefs() { return testing::SinkRefsJson(); }

// [layers][heads] from the references, flattened row-major.
std::vector<float> Flat(const nlohmann::json& table) {
  std::vector<float> out;
  for (const auto& layer : table) {
    for (const auto& head : layer) out.push_back(head.get<float>());
  }
  return out;
}

void ExpectMatches(const std::vector<float>& got, const nlohmann::json& want, const std::string& what, float tolerance = 1e-4f) {
  const std::vector<float> expected = Flat(want);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << what << " [layer x head " << i << "]";
}

void ExpectMatchesReference(const AttentionDiagnostics& got, const std::string& model, const std::string& prompt,
                            const std::string& variant) {
  const nlohmann::json& want = SinkRefs()["models"][model][prompt][variant];
  const std::string what = model + " " + prompt + " " + variant;
  EXPECT_EQ(got.num_layers, static_cast<int>(want["sink_mass"].size())) << what;
  ExpectMatches(got.sink_mass, want["sink_mass"], what + " sink_mass");
  ExpectMatches(got.hub_mass, want["hub_mass"], what + " hub_mass");
  if (variant == "arach") {
    ASSERT_TRUE(got.has_hub_rows()) << what;
    ExpectMatches(got.hub_rows_sink_mass, want["hub_rows_sink_mass"], what + " hub_rows_sink_mass");
    ExpectMatches(got.hub_rows_hub_mass, want["hub_rows_hub_mass"], what + " hub_rows_hub_mass");
  } else {
    EXPECT_FALSE(got.has_hub_rows()) << what;
  }
}

struct Job {
  std::string prompt_key, variant;
  EngineRequest request;
  std::shared_ptr<CollectingObserver> observer = std::make_shared<CollectingObserver>();
};

Job ScoreJob(const std::string& model, const std::string& prompt, const std::string& variant) {
  Job job;
  job.prompt_key = prompt;
  job.variant = variant;
  for (const auto& id : SinkRefs()["models"][model][prompt]["ids"]) job.request.prompt.push_back(id.get<int32_t>());
  job.request.kind = RequestKind::kScore;
  job.request.variant.arach = variant == "arach";
  job.request.variant.arach_offset = -0.5f;
  job.request.attention_diagnostics = true;
  return job;
}

const std::vector<std::string> kModels = {"gpt2-tiny", "neox-tiny"};
const std::vector<std::string> kPrompts = {"p7", "p48"};
const std::vector<std::string> kVariants = {"base", "arach"};

TEST(AttentionSink, ScoreDiagnosticsMatchTheReferences) {
  ARACH_REQUIRE_FIXTURES();
  for (const std::string& model : kModels) {
    auto engine = testing::MakeFixtureEngine(model);
    ASSERT_NE(engine, nullptr);
    for (const std::string& prompt : kPrompts) {
      for (const std::string& variant : kVariants) {
        Job job = ScoreJob(model, prompt, variant);
        ASSERT_TRUE(engine->Submit(job.request, job.observer).ok());
        ASSERT_TRUE(job.observer->Wait());
        const FinishInfo finish = job.observer->finish();
        ASSERT_TRUE(finish.status.ok()) << finish.status;
        ASSERT_TRUE(finish.attention.has_value()) << model << " " << prompt << " " << variant;
        ExpectMatchesReference(*finish.attention, model, prompt, variant);
      }
    }
  }
}

TEST(AttentionSink, ChunkedAndBatchedPromptsGiveTheSameMeans) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.max_num_batched_tokens = 5;  // p48 takes ten steps, shared with the other requests
  for (const std::string& model : kModels) {
    auto engine = testing::MakeFixtureEngine(model, config);
    ASSERT_NE(engine, nullptr);
    std::vector<Job> jobs;
    for (const std::string& prompt : kPrompts) {
      for (const std::string& variant : kVariants) jobs.push_back(ScoreJob(model, prompt, variant));
    }
    Job plain = ScoreJob(model, "p48", "arach");
    plain.request.attention_diagnostics = false;
    for (Job& job : jobs) ASSERT_TRUE(engine->Submit(job.request, job.observer).ok());
    ASSERT_TRUE(engine->Submit(plain.request, plain.observer).ok());
    for (Job& job : jobs) {
      ASSERT_TRUE(job.observer->Wait());
      ASSERT_TRUE(job.observer->finish().attention.has_value());
      ExpectMatchesReference(*job.observer->finish().attention, model, job.prompt_key, job.variant);
    }
    ASSERT_TRUE(plain.observer->Wait());
    EXPECT_FALSE(plain.observer->finish().attention.has_value()) << "only requests that ask get diagnostics";
  }
}

TEST(AttentionSink, GenerationWithACachedPromptStillCountsEveryPromptRow) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  Job warm = ScoreJob("gpt2-tiny", "p48", "arach");
  warm.request.kind = RequestKind::kGenerate;
  warm.request.attention_diagnostics = false;
  warm.request.sampling.max_tokens = 4;
  warm.request.sampling.temperature = 0.0f;
  ASSERT_TRUE(engine->Submit(warm.request, warm.observer).ok());
  ASSERT_TRUE(warm.observer->Wait());
  Job diagnosed = warm;
  diagnosed.observer = std::make_shared<CollectingObserver>();
  diagnosed.request.attention_diagnostics = true;
  ASSERT_TRUE(engine->Submit(diagnosed.request, diagnosed.observer).ok());
  ASSERT_TRUE(diagnosed.observer->Wait());
  const FinishInfo finish = diagnosed.observer->finish();
  EXPECT_EQ(finish.usage.cached_prompt_tokens, 0) << "a diagnosed prompt is computed in full";
  EXPECT_EQ(diagnosed.observer->tokens().size(), 4u);
  ASSERT_TRUE(finish.attention.has_value());
  ExpectMatchesReference(*finish.attention, "gpt2-tiny", "p48", "arach");
}

TEST(AttentionSink, APreemptedPromptIsCountedOnce) {
  ARACH_REQUIRE_FIXTURES();
  // Six blocks of 16 positions, five tokens per step: the generation (admitted first, 48 + 40 positions)
  // grows into the blocks the diagnosed prompt needs, which is preempted and computed again.
  EngineConfig config;
  config.max_num_batched_tokens = 5;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", config, /*kv_blocks=*/6);
  ASSERT_NE(engine, nullptr);
  Job long_generation = ScoreJob("gpt2-tiny", "p48", "base");
  long_generation.request.kind = RequestKind::kGenerate;
  long_generation.request.attention_diagnostics = false;
  long_generation.request.sampling.max_tokens = 40;
  long_generation.request.sampling.ignore_eos = true;
  Job diagnosed = ScoreJob("gpt2-tiny", "p48", "arach");
  ASSERT_TRUE(engine->Submit(long_generation.request, long_generation.observer).ok());
  ASSERT_TRUE(engine->Submit(diagnosed.request, diagnosed.observer).ok());
  ASSERT_TRUE(diagnosed.observer->Wait());
  ASSERT_TRUE(long_generation.observer->Wait());
  const FinishInfo finish = diagnosed.observer->finish();
  ASSERT_TRUE(finish.status.ok()) << finish.status;
  EXPECT_GT(finish.usage.preemptions, 0) << "the case must preempt the diagnosed prompt to test anything";
  ASSERT_TRUE(finish.attention.has_value());
  ExpectMatchesReference(*finish.attention, "gpt2-tiny", "p48", "arach");
}

}  // namespace
}  // namespace arach
