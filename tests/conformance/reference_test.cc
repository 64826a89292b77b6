// Every fixture model under every variant its references hold, against ../shared/fixtures/refs (float32,
// an independent PyTorch forward): the classic models (gpt2-tiny, neox-tiny, llama-stories260k: refs/refs.*)
// and the modern ones (qwen3-tiny, qwen2-tiny, llama3-tiny, real tokenizers, BF16/F16, one sharded:
// refs/refs_modern.*). Last-position logits of p7 and p48 and all-position logits of p7 (where referenced)
// within 1e-3, the greedy p48 continuation exactly, and validation perplexity.
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

class References : public ::testing::TestWithParam<testing::RefCase> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.adapter = GetParam().model != "llama-stories260k";  // the one fixture without an adapter
    auto runner = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  bool Modern() const { return testing::IsModernModel(GetParam().model); }
  Variant VariantUnderTest() const { return testing::VariantOfRef(GetParam().variant); }
  const nlohmann::json& Ref() const {
    return testing::RefsJsonFor(GetParam().model)["models"][GetParam().model]["variants"][GetParam().variant];
  }
  std::string RefName(const std::string& suffix) const { return GetParam().model + "." + GetParam().variant + "." + suffix; }
  std::unique_ptr<ModelRunner> runner_;
};

TEST_P(References, LastLogitsOfP7AndP48) {
  OfflineSession session(*runner_);
  const size_t vocab = runner_->config().vocab_size;
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = RefPrompt(GetParam().model, prompt);
    auto logits = session.Logits(ids, 0, VariantUnderTest());
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> ref = RefTensor(RefName(prompt + ".last_logits"));
    ASSERT_EQ(ref.size(), vocab);
    EXPECT_LT(MaxAbsDiff(logits->data() + (ids.size() - 1) * vocab, ref.data(), vocab), kLogitTolerance) << prompt;
  }
}

// The references hold all-position logits of p7 for base and ARACH (b = -0.5); prefilled in chunks of 3.
TEST_P(References, AllPositionLogitsOfP7WhereReferenced) {
  if (!testing::HasRefTensor(RefName("p7.logits"))) GTEST_SKIP() << "no all-position reference for " << RefName("p7");
  OfflineSession session(*runner_);
  auto logits = session.Logits(RefPrompt(GetParam().model, "p7"), 3, VariantUnderTest());
  ASSERT_TRUE(logits.ok()) << logits.status();
  const std::vector<float> ref = RefTensor(RefName("p7.logits"));
  ASSERT_EQ(logits->size(), ref.size());
  EXPECT_LT(MaxAbsDiff(logits->data(), ref.data(), ref.size()), kLogitTolerance);
}

// The modern models' continuations are checked with the prompt prefilled in chunks of 16.
TEST_P(References, GreedyP48Continuation) {
  OfflineSession session(*runner_);
  GreedyOptions options;
  options.variant = VariantUnderTest();
  options.max_new_tokens = 32;
  options.prefill_chunk = Modern() ? 16 : 0;
  auto out = session.GenerateGreedy({RefPrompt(GetParam().model, "p48")}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], Ref()["greedy_p48_32"].get<std::vector<int32_t>>())
      << "smallest reference top-1/top-2 margin " << Ref().value("greedy_p48_32_min_top2_margin", nlohmann::json("n/a"));
}

// Windows of 129 tokens (the first is context only), at most 8; the modern references are float32 end to
// end and hold to 1e-4, the classic ones to 1e-3.
TEST_P(References, ValidationPerplexity) {
  const absl::StatusOr<std::vector<int32_t>> val = testing::ValidationIds(GetParam().model);
  ASSERT_TRUE(val.ok()) << val.status();
  OfflineSession session(*runner_);
  double total = 0.0;
  int count = 0;
  const int windows = std::min<int>(8, (static_cast<int>(val->size()) - 1) / 128);
  for (int w = 0; w < windows; ++w) {
    const std::vector<int32_t> window(val->begin() + 128 * w, val->begin() + 128 * w + 129);
    auto logprobs = testing::TokenLogProbs(session, window, Modern() ? 64 : 512, VariantUnderTest());
    ASSERT_TRUE(logprobs.ok()) << logprobs.status();
    for (double lp : *logprobs) total -= lp;
    count += static_cast<int>(logprobs->size());
  }
  const double ppl = std::exp(total / count), ref_ppl = Ref()["val_ppl"].get<double>();
  EXPECT_EQ(count, Ref()["val_tokens"].get<int>());
  EXPECT_NEAR(ppl, ref_ppl, (Modern() ? 1e-4 : 1e-3) * ref_ppl) << "ppl " << ppl << " vs " << ref_ppl;
}

INSTANTIATE_TEST_SUITE_P(Refs, References, ::testing::ValuesIn(testing::ReferenceCases(/*modern=*/true)), testing::RefCaseName);

}  // namespace
}  // namespace arach
