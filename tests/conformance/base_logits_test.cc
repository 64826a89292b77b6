// Base-variant conformance against ../shared/fixtures/refs: float32 CPU logits within 1e-3 of the
// independent reference forward, greedy tokens identical, validation perplexity within 0.1%.
#include <cmath>

#include "engine/runner/offline_session.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::MaxAbsDiff;
using testing::RefPrompt;
using testing::RefTensor;

constexpr float kLogitTolerance = 1e-3f;

class BaseConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    auto runner = testing::LoadFixtureRunner(GetParam());
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  std::unique_ptr<ModelRunner> runner_;
};

TEST_P(BaseConformance, AllPositionLogitsOfP7) {
  OfflineSession session(*runner_);
  const std::vector<int32_t> p7 = RefPrompt(GetParam(), "p7");
  auto logits = session.Logits(p7);
  ASSERT_TRUE(logits.ok()) << logits.status();
  const std::vector<float> ref = RefTensor(GetParam() + ".base.p7.logits");
  ASSERT_EQ(logits->size(), ref.size());
  EXPECT_LT(MaxAbsDiff(logits->data(), ref.data(), ref.size()), kLogitTolerance);
}

TEST_P(BaseConformance, LastLogitsOfP7AndP48) {
  OfflineSession session(*runner_);
  const size_t vocab = runner_->config().vocab_size;
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = RefPrompt(GetParam(), prompt);
    auto logits = session.Logits(ids);
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> ref = RefTensor(GetParam() + ".base." + prompt + ".last_logits");
    ASSERT_EQ(ref.size(), vocab);
    EXPECT_LT(MaxAbsDiff(logits->data() + (ids.size() - 1) * vocab, ref.data(), vocab), kLogitTolerance) << prompt;
  }
}

TEST_P(BaseConformance, GreedyP48Continuation) {
  OfflineSession session(*runner_);
  GreedyOptions options;
  options.max_new_tokens = 32;
  auto out = session.GenerateGreedy({RefPrompt(GetParam(), "p48")}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const auto expected =
      testing::RefsJson()["models"][GetParam()]["variants"]["base"]["greedy_p48_32"].get<std::vector<int32_t>>();
  EXPECT_EQ((*out)[0], expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BaseConformance,
                         ::testing::Values("gpt2-tiny", "neox-tiny", "llama-stories260k"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace arach
