// The serving engine on the simulated CUDA backend (the CUDA backend's kernels on the SIMT simulator), where tokens
// are picked on the device and a step copies back only ids and log-probs: the same tokens as the host's sampler on
// the same logits (greedy, and seeded sampling with penalties, logit bias, top-k/top-p/min-p, every variant), the
// same log-probs, and a seeded request's tokens do not depend on the requests beside it.
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/cuda_sim/simulated_cuda_backend.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

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

// Prompt rows are scored where the logits are (Backend::ScoreRows: only scores come back) unless the request asks
// for alternatives, which are read off rows copied to the host: both give the same log-probs, ranks and greedy
// flags, for a score request and for a generation that echoes its prompt's log-probs (and still generates).
TEST(EngineOnSimulatedCudaScoring, PromptRowsScoredOnTheDeviceEqualThoseReadOnTheHost) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = SimulatedEngine(true);
  ASSERT_NE(engine, nullptr);
  for (const RequestKind kind : {RequestKind::kScore, RequestKind::kGenerate}) {
    SCOPED_TRACE(kind == RequestKind::kScore ? "score" : "generate");
    EngineRequest on_device = Request(3, /*sampled=*/false);  // ARACH
    for (int t = 0; t < 12; ++t) on_device.prompt.push_back(static_cast<int32_t>((13 * t + 7) % 250));
    on_device.sampling.max_tokens = 2;
    on_device.kind = kind;
    on_device.sampling.prompt_logprobs = true;
    EngineRequest on_host = on_device;
    on_host.prompt_top_logprobs = 1;
    auto device_observer = std::make_shared<CollectingObserver>(), host_observer = std::make_shared<CollectingObserver>();
    ASSERT_TRUE(engine->Submit(on_device, device_observer).ok());
    ASSERT_TRUE(engine->Submit(on_host, host_observer).ok());
    ASSERT_TRUE(device_observer->Wait());
    ASSERT_TRUE(host_observer->Wait());
    const FinishInfo& device = device_observer->finish();
    const FinishInfo& host = host_observer->finish();
    ASSERT_TRUE(device.status.ok()) << device.status;
    const size_t scored = on_device.prompt.size() - 1;
    ASSERT_EQ(device.prompt_logprobs.size(), scored);
    ASSERT_EQ(host.prompt_logprobs.size(), scored);
    EXPECT_EQ(device.prompt_ranks, host.prompt_ranks);
    EXPECT_EQ(device.prompt_argmax, host.prompt_argmax);
    EXPECT_EQ(device.prompt_is_greedy, host.prompt_is_greedy);
    for (size_t i = 0; i < scored; ++i) EXPECT_NEAR(device.prompt_logprobs[i], host.prompt_logprobs[i], 1e-5) << i;
    EXPECT_EQ(device_observer->tokens(), host_observer->tokens());
    EXPECT_EQ(device_observer->tokens().size(), kind == RequestKind::kScore ? 0u : 2u);
  }
}

}  // namespace
}  // namespace arach
