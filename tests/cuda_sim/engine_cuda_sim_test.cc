// The serving engine on the simulated CUDA backend (the CUDA backend's kernels on the SIMT simulator), where tokens
// are picked on the device and a step copies back only ids and log-probs: the same tokens as the host's sampler on
// the same logits (greedy, and seeded sampling with penalties, logit bias, top-k/top-p/min-p, every variant), the
// same log-probs, and a seeded request's tokens do not depend on the requests beside it.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/runner/offline_session.h"
#include "engine/sampling/logprobs.h"
#include "gtest/gtest.h"
#include "tests/cuda_sim/simulated_cuda_backend.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/output_projection.h"
#include "tests/testing/reduced_precision.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using testing::CollectingObserver;

constexpr char kModel[] = "gpt2-tiny";

std::unique_ptr<Engine> SimulatedEngine(bool sample_on_device) {
  EngineConfig config;
  config.sample_on_device = sample_on_device;
  return testing::MakeFixtureEngineOn(testing::CreateSimulatedCudaBackendFor, kModel, config, 64);
}

EngineRequest Request(int i, bool sampled) {
  EngineRequest request;
  for (int t = 0; t < 4 + 2 * i; ++t) request.prompt.push_back(static_cast<int32_t>((37 * t + 11 * i + 5) % 200 + 10));
  request.variant.arach = i % 2 == 1;
  request.variant.skip = (i / 2) % 2 == 1;
  SamplingParams& sp = request.sampling;
  sp.max_tokens = 6;
  sp.ignore_eos = true;
  sp.logprobs = true;
  if (!sampled) {
    sp.temperature = 0.0f;
    return request;
  }
  sp.temperature = 0.7f + 0.2f * static_cast<float>(i % 3);
  sp.top_k = i % 2 == 0 ? 40 : 0;
  sp.top_p = i % 3 == 0 ? 1.0f : 0.9f;
  sp.min_p = i % 4 == 1 ? 0.05f : 0.0f;
  sp.repetition_penalty = i % 2 == 0 ? 1.3f : 1.0f;
  sp.presence_penalty = i % 3 == 1 ? 0.5f : 0.0f;
  sp.frequency_penalty = i % 3 == 2 ? 0.4f : 0.0f;
  sp.logit_bias = {{static_cast<int32_t>(100 + i), 2.0f}};
  sp.seed = 1000 + i;
  return request;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

// Runs `requests` at once on `engine`.
std::vector<Outcome> RunAll(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  for (const EngineRequest& request : requests) {
    observers.push_back(std::make_shared<CollectingObserver>());
    EXPECT_TRUE(engine.Submit(request, observers.back()).ok());
  }
  std::vector<Outcome> outcomes;
  for (auto& observer : observers) {
    EXPECT_TRUE(observer->Wait());
    EXPECT_EQ(observer->finish().reason, FinishReason::kLength) << observer->finish().status;
    Outcome outcome;
    for (const StreamChunk& chunk : observer->chunks()) {
      for (const SampledToken& token : chunk.tokens) {
        outcome.tokens.push_back(token.token);
        outcome.logprobs.push_back(token.logprob);
      }
    }
    outcomes.push_back(outcome);
  }
  return outcomes;
}

class EngineOnSimulatedCuda : public ::testing::TestWithParam<bool> {  // greedy or sampled
 protected:
  void SetUp() override { ARACH_REQUIRE_FIXTURES(); }
};

TEST_P(EngineOnSimulatedCuda, DevicePicksTheHostSamplersTokensWithTheModelsLogprobs) {
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(Request(i, GetParam()));
  std::unique_ptr<Engine> device = SimulatedEngine(true), host = SimulatedEngine(false);
  ASSERT_NE(device, nullptr);
  ASSERT_NE(host, nullptr);
  const std::vector<Outcome> on_device = RunAll(*device, requests), on_host = RunAll(*host, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(on_device[i].tokens, on_host[i].tokens) << "request " << i;
    ASSERT_EQ(on_device[i].logprobs.size(), on_host[i].logprobs.size());
    for (size_t t = 0; t < on_device[i].logprobs.size(); ++t) {
      EXPECT_NEAR(on_device[i].logprobs[t], on_host[i].logprobs[t], 1e-4) << "request " << i << " token " << t;
      EXPECT_LT(on_device[i].logprobs[t], 0.0f);
    }
  }
}

// Speculative decoding on the device's rows: a request with a prediction samples its rows on the host (every row of
// the chunk comes back), and its tokens are those the device picked without the prediction.
TEST_P(EngineOnSimulatedCuda, APredictionVerifiedOnTheDevicesRowsChangesNoToken) {
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(Request(i, GetParam()));
  std::unique_ptr<Engine> device = SimulatedEngine(true);
  ASSERT_NE(device, nullptr);
  const std::vector<Outcome> plain = RunAll(*device, requests);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].prediction = plain[i].tokens;
  const std::vector<Outcome> predicted = RunAll(*device, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(predicted[i].tokens, plain[i].tokens) << "request " << i;
    for (size_t t = 0; t < plain[i].logprobs.size(); ++t) {
      EXPECT_NEAR(predicted[i].logprobs[t], plain[i].logprobs[t], 1e-4) << "request " << i << " token " << t;
    }
  }
  EXPECT_GT(device->stats().accepted_draft_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSampled, EngineOnSimulatedCuda, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "sampled" : "greedy"; });

TEST(EngineOnSimulatedCudaBatches, ASeededRequestDrawsTheSameTokensAloneAndBesideOthers) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = SimulatedEngine(true);
  ASSERT_NE(engine, nullptr);
  const EngineRequest target = Request(2, /*sampled=*/true);
  const std::vector<Outcome> alone = RunAll(*engine, {target});
  const std::vector<Outcome> together = RunAll(*engine, {Request(1, true), Request(3, true), target, Request(0, false)});
  EXPECT_EQ(together[2].tokens, alone[0].tokens);
}

// Prompt rows are scored where the logits are (Backend::ScoreRows: only scores and alternatives come back): the
// log-probs, ranks, greedy flags and alternatives equal those read on the host off the same rows (an offline
// session on the same simulated device), for a score request and for a generation that echoes its prompt's
// log-probs (and still generates).
TEST(EngineOnSimulatedCudaScoring, PromptRowsScoredOnTheDeviceEqualThoseReadOnTheHost) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = SimulatedEngine(true);
  ASSERT_NE(engine, nullptr);
  testing::FixtureOptions options;
  options.num_blocks = 64;
  options.adapter = true;
  options.device = DeviceKind::kCuda;
  options.make_backend = testing::CreateSimulatedCudaBackendFor;
  auto runner = testing::LoadFixtureRunner(kModel, options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  OfflineSession session(**runner);
  EngineRequest request = Request(3, /*sampled=*/false);  // ARACH and the adapter
  for (int t = 0; t < 12; ++t) request.prompt.push_back(static_cast<int32_t>((13 * t + 7) % 250));
  request.sampling.max_tokens = 2;
  request.sampling.prompt_logprobs = true;
  request.prompt_top_logprobs = 3;
  const std::vector<int32_t> context(request.prompt.begin(), request.prompt.end() - 1);
  auto rows = session.Logits(context, 0, request.variant);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const size_t vocab = static_cast<size_t>(engine->model_config().vocab_size);
  for (const RequestKind kind : {RequestKind::kScore, RequestKind::kGenerate}) {
    SCOPED_TRACE(kind == RequestKind::kScore ? "score" : "generate");
    request.kind = kind;
    auto observer = std::make_shared<CollectingObserver>();
    ASSERT_TRUE(engine->Submit(request, observer).ok());
    ASSERT_TRUE(observer->Wait());
    const FinishInfo& scored = observer->finish();
    ASSERT_TRUE(scored.status.ok()) << scored.status;
    ASSERT_EQ(scored.prompt_logprobs.size(), context.size());
    ASSERT_EQ(scored.prompt_top_logprobs.size(), context.size());
    for (size_t i = 0; i < context.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "position " << i);
      const std::span<const float> row = std::span<const float>(*rows).subspan(i * vocab, vocab);
      const SampledToken want = RawLogprobs(row, request.prompt[i + 1], 3);
      EXPECT_NEAR(scored.prompt_logprobs[i], want.logprob, 1e-5);
      EXPECT_EQ(scored.prompt_ranks[i], RankOf(row, request.prompt[i + 1]));
      EXPECT_EQ(scored.prompt_argmax[i], ArgMax(row));
      EXPECT_EQ(scored.prompt_is_greedy[i], ArgMax(row) == request.prompt[i + 1]);
      ASSERT_EQ(scored.prompt_top_logprobs[i].size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(scored.prompt_top_logprobs[i][k].token, want.top[k].token) << k;
        EXPECT_NEAR(scored.prompt_top_logprobs[i][k].logprob, want.top[k].logprob, 1e-5) << k;
      }
    }
    EXPECT_EQ(observer->tokens().size(), kind == RequestKind::kScore ? 0u : 2u);
  }
}

// An embedding request's hidden state comes from the device's final-norm rows (the backend's 16-bit type, widened
// as it is downloaded): through the model's own output projection it gives the references' last-position logits
// within the reduced-precision tolerance, for p48 prefilled in chunks beside generations, base and ARACH.
TEST(EngineOnSimulatedCudaEmbeddings, TheLastHiddenStateProjectsOntoTheReferenceLogits) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.max_num_batched_tokens = 20;
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngineOn(testing::CreateSimulatedCudaBackendFor, kModel, config, 64);
  ASSERT_NE(engine, nullptr);
  auto projection = testing::OutputProjection::Load(kModel);
  ASSERT_TRUE(projection.ok()) << projection.status();
  const std::vector<int32_t> prompt = testing::RefPrompt(kModel, "p48");
  for (const std::string variant : {"base", "arach"}) {
    SCOPED_TRACE(variant);
    std::vector<std::shared_ptr<CollectingObserver>> beside;
    for (int i = 0; i < 2; ++i) {
      beside.push_back(std::make_shared<CollectingObserver>());
      ASSERT_TRUE(engine->Submit(Request(i, /*sampled=*/false), beside.back()).ok());
    }
    EngineRequest request;
    request.kind = RequestKind::kEmbed;
    request.prompt = prompt;
    request.variant = testing::VariantOfRef(variant);
    auto observer = std::make_shared<CollectingObserver>();
    ASSERT_TRUE(engine->Submit(request, observer).ok());
    ASSERT_TRUE(observer->Wait());
    for (auto& other : beside) ASSERT_TRUE(other->Wait());
    const absl::StatusOr<float> error =
        projection->MaxLogitError(observer->finish().embedding, std::string(kModel) + "." + variant + ".p48.last_logits");
    ASSERT_TRUE(error.ok()) << error.status() << " " << observer->finish().status;
    EXPECT_LT(*error, testing::kReducedPrecisionLogitTolerance);
  }
}

// A mean-pooled embedding (a Sentence-Transformers folder's Pooling module) reads every prompt row's final-norm
// hidden state from the device, chunk by chunk: the CPU engine's mean within the reduced-precision tolerance.
TEST(EngineOnSimulatedCudaEmbeddings, MeanPoolingReadsEveryRowOfTheDevice) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  testing::MakePooledFixtureFolder(kModel, "pooling_mode_mean_tokens", dir.path());
  EngineConfig config;
  config.max_num_batched_tokens = 20;
  std::unique_ptr<Engine> device = testing::MakeFixtureEngineOn(testing::CreateSimulatedCudaBackendFor, kModel, config, 64, dir.path());
  std::unique_ptr<Engine> cpu = testing::MakeFixtureEngine(kModel, config, 64, dir.path());
  ASSERT_NE(device, nullptr);
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(device->embedding_config().pooling, PoolingMode::kMean);
  EngineRequest request;
  request.kind = RequestKind::kEmbed;
  request.prompt = testing::RefPrompt(kModel, "p48");
  for (const std::string variant : {"base", "arach"}) {
    SCOPED_TRACE(variant);
    request.variant = testing::VariantOfRef(variant);
    std::vector<std::vector<float>> embeddings;
    for (Engine* engine : {device.get(), cpu.get()}) {
      auto observer = std::make_shared<CollectingObserver>();
      ASSERT_TRUE(engine->Submit(request, observer).ok());
      ASSERT_TRUE(observer->Wait());
      ASSERT_TRUE(observer->finish().status.ok()) << observer->finish().status;
      embeddings.push_back(observer->finish().embedding);
    }
    ASSERT_EQ(embeddings[0].size(), embeddings[1].size());
    ASSERT_FALSE(embeddings[0].empty());
    EXPECT_LT(testing::MaxAbsDiff(embeddings[0].data(), embeddings[1].data(), embeddings[0].size()), testing::kReducedPrecisionLogitTolerance);
  }
}

}  // namespace
}  // namespace arach
