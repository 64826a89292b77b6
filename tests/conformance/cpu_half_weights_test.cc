// The CPU backend with half-width weight matrices (--weight_dtype f16 / bf16) against the float32 references of
// every fixture family under every variant (the hub and the adapter go through the same kernels): logits within
// the dtype's tolerance, the same top-1 where the reference has a clear winner, greedy tokens equal up to the
// first near tie (testing/reduced_precision.h); and the weight matrices take half their float32 bytes.
// Tolerances: f16 (11 significant bits) meets the GPU's 5e-2; bf16 (8 bits) moves these small models' logits
// up to 0.084 (qwen2-tiny; llama-stories260k 0.068), so its bound is 0.1.
#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/reduced_precision.h"

namespace arach {
namespace {

using Case = std::tuple<testing::RefCase, WeightDTypeChoice>;

class CpuHalfWeights : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.adapter = ref().model != "llama-stories260k";
    options.weight_dtype = std::get<1>(GetParam());
    auto runner = testing::LoadFixtureRunner(ref().model, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
    options.weight_dtype = WeightDTypeChoice::kF32;
    auto float32 = testing::LoadFixtureRunner(ref().model, options);
    ASSERT_TRUE(float32.ok()) << float32.status();
    float32_runner_ = std::move(*float32);
  }
  const testing::RefCase& ref() const { return std::get<0>(GetParam()); }
  float tolerance() const { return std::get<1>(GetParam()) == WeightDTypeChoice::kF16 ? testing::kReducedPrecisionLogitTolerance : 0.1f; }
  std::unique_ptr<ModelRunner> runner_, float32_runner_;
};

TEST_P(CpuHalfWeights, LastLogitsOfP7AndP48) { testing::ExpectLastLogitsMatchRefs(*runner_, ref(), tolerance()); }

TEST_P(CpuHalfWeights, AllPositionLogitsOfP7WhereReferenced) {
  if (!testing::ExpectAllPositionLogitsMatchRefs(*runner_, ref(), tolerance())) GTEST_SKIP() << "no all-position reference";
}

TEST_P(CpuHalfWeights, GreedyP48IdenticalUpToFirstNearTie) {
  testing::ExpectGreedyMatchesRefsUpToNearTie(*runner_, *float32_runner_, ref());
}

TEST_P(CpuHalfWeights, WeightMatricesTakeHalfTheBytes) {
  EXPECT_EQ(runner_->backend().weight_dtype(), std::get<1>(GetParam()) == WeightDTypeChoice::kF16 ? DType::kF16 : DType::kBF16);
  // Norms, biases and the hub's input row stay float32: a little over half.
  const double ratio = static_cast<double>(runner_->weight_bytes()) / static_cast<double>(float32_runner_->weight_bytes());
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.56);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return testing::RefCaseName(::testing::TestParamInfo<testing::RefCase>(std::get<0>(info.param), info.index)) + "_" +
         std::string(WeightDTypeChoiceName(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Refs, CpuHalfWeights,
                         ::testing::Combine(::testing::ValuesIn(testing::ReferenceCases(/*modern=*/true)),
                                            ::testing::Values(WeightDTypeChoice::kF16, WeightDTypeChoice::kBF16)),
                         CaseName);

}  // namespace
}  // namespace arach
