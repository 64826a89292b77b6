// The CPU backend with int8 weight matrices (--weight_dtype int8: one scale per output row) against float32
// weights, on every fixture family under every variant (the hub and the adapter go through the same kernels),
// teacher-forced over the first 512 tokens of each model's validation text (llama-stories260k's is 366; windows of
// 256 tokens, as gpt2-tiny's and neox-tiny's context is 256), prefilled (float32 activations) and token by token
// (the decode kernel's integer dot products, activations quantized per row): perplexity within 2% of float32's
// and the float32 model's top-1 next token kept at 97% of the positions at least; the weight matrices take about a
// quarter of their float32 bytes. Both runners keep a float32 KV cache, so the weights are the only difference.
#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

constexpr int kScoredTokens = 512;

struct Teacher {
  double nll = 0;                // mean negative log-likelihood of the next token
  std::vector<int32_t> argmax;   // the top-1 next token at each position
};

constexpr int kWindow = 256;

// The text in windows of kWindow predicted tokens, each scored on its own (its first token has no context before
// it), all windows side by side in one batch, fed `chunk` tokens per step: kWindow (prefill: the GEMM path,
// float32 activations) or 1 (decode: the integer dot products, activations quantized per row).
absl::StatusOr<Teacher> TeacherForce(ModelRunner& runner, const std::vector<int32_t>& ids, const Variant& variant, int chunk) {
  OfflineSession session(runner);
  Teacher t;
  const size_t predicted = ids.size() - 1;
  t.argmax.resize(predicted);
  std::vector<std::vector<int32_t>> windows, targets;  // targets: each window shifted by one token
  for (size_t begin = 0; begin < predicted; begin += kWindow) {
    const size_t end = std::min(predicted, begin + kWindow);
    windows.emplace_back(ids.begin() + begin, ids.begin() + end);
    targets.emplace_back(ids.begin() + begin + 1, ids.begin() + end + 1);
  }
  // Scored where the logits are (the runner's ScoreRows): only each row's log-prob and argmax come back.
  absl::Status status = session.ScoreEachPosition(windows, targets, chunk, [&](int window, int position, const RowScore& score) {
    const size_t at = static_cast<size_t>(window) * kWindow + position;
    t.nll -= score.logprob;
    t.argmax[at] = score.argmax;
  }, std::vector<Variant>(windows.size(), variant));
  if (!status.ok()) return status;
  t.nll /= static_cast<double>(predicted);
  return t;
}

class CpuInt8Weights : public ::testing::TestWithParam<testing::RefCase> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.num_blocks = 2 * (kWindow + 16) / options.block_size;
    options.adapter = GetParam().model != "llama-stories260k";
    options.kv_cache_dtype = KvDTypeChoice::kF32;
    options.weight_dtype = WeightDTypeChoice::kInt8;
    auto int8 = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(int8.ok()) << int8.status();
    int8_ = std::move(*int8);
    options.weight_dtype = WeightDTypeChoice::kF32;
    auto f32 = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(f32.ok()) << f32.status();
    f32_ = std::move(*f32);
  }
  // Perplexity of the int8 model fed `chunk` tokens per step within 2% of the float32 model's (prefilled), and
  // the float32 model's top-1 next token kept at 97% of the positions at least.
  void ExpectCloseToFloat32(int chunk, const char* path) {
    auto ids = testing::ValidationIds(GetParam().model);
    ASSERT_TRUE(ids.ok()) << ids.status();
    ASSERT_GT(ids->size(), static_cast<size_t>(kWindow));
    const std::vector<int32_t> text(ids->begin(), ids->begin() + std::min<size_t>(ids->size(), kScoredTokens + 1));
    const Variant variant = testing::VariantOfRef(GetParam().variant);
    auto quantized = TeacherForce(*int8_, text, variant, chunk);
    ASSERT_TRUE(quantized.ok()) << quantized.status();
    auto reference = TeacherForce(*f32_, text, variant, kWindow);
    ASSERT_TRUE(reference.ok()) << reference.status();
    const double ppl_ratio = std::exp(quantized->nll - reference->nll);
    int agree = 0;
    for (size_t i = 0; i < quantized->argmax.size(); ++i) agree += quantized->argmax[i] == reference->argmax[i];
    const double agreement = static_cast<double>(agree) / quantized->argmax.size();
    EXPECT_LE(std::fabs(ppl_ratio - 1.0), 0.02) << "perplexity " << std::exp(quantized->nll) << " vs " << std::exp(reference->nll);
    EXPECT_GE(agreement, 0.97);
    std::cout << "[int8 " << path << "] " << GetParam().model << " " << GetParam().variant << ": perplexity "
              << std::exp(quantized->nll) << " vs float32 " << std::exp(reference->nll) << " (x" << ppl_ratio
              << "), top-1 agreement " << agree << "/" << quantized->argmax.size() << "\n";
  }

  std::unique_ptr<ModelRunner> int8_, f32_;
};

TEST_P(CpuInt8Weights, PrefillPerplexityWithinTwoPercentAndTop1AgreementAtLeast97Percent) {
  ExpectCloseToFloat32(kWindow, "prefill");
}

TEST_P(CpuInt8Weights, TokenByTokenDecodeWithQuantizedActivationsWithinTheSameBounds) {
  ExpectCloseToFloat32(1, "decode");
}


TEST_P(CpuInt8Weights, WeightMatricesTakeAQuarterOfTheBytes) {
  EXPECT_EQ(int8_->backend().weight_dtype(), DType::kI8);
  // Norms, biases, the hub's input row and the per-row scales stay float32: a little over a quarter.
  const double ratio = static_cast<double>(int8_->weight_bytes()) / static_cast<double>(f32_->weight_bytes());
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.3);
}

INSTANTIATE_TEST_SUITE_P(Refs, CpuInt8Weights, ::testing::ValuesIn(testing::ReferenceCases(/*modern=*/true)), testing::RefCaseName);

}  // namespace
}  // namespace arach
