// Which dtype the CPU backend keeps weights and the KV cache in: an explicit choice wins; auto takes f16 only
// where both the CPU and this build's kernels convert halves in hardware (a portable build widening halves in
// software would run f16 several times slower than float32), and the KV cache follows the weights.
#include "engine/backend/cpu/cpu_weight_dtype.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

TEST(CpuWeightDType, AutoTakesHalvesOnlyWhereCpuAndKernelsConvertThemInHardware) {
  EXPECT_EQ(PlanCpuWeightDType(WeightDTypeChoice::kAuto, true, true).dtype, DType::kF16);
  const WeightDTypePlan portable = PlanCpuWeightDType(WeightDTypeChoice::kAuto, true, false);
  EXPECT_EQ(portable.dtype, DType::kF32);
  EXPECT_THAT(portable.reason, HasSubstr("ARACH_CPU_NATIVE=OFF"));
  const WeightDTypePlan old_cpu = PlanCpuWeightDType(WeightDTypeChoice::kAuto, false, false);
  EXPECT_EQ(old_cpu.dtype, DType::kF32);
  EXPECT_THAT(old_cpu.reason, HasSubstr("no F16C"));
}

TEST(CpuWeightDType, AnExplicitChoiceWins) {
  for (bool hardware : {false, true}) {
    EXPECT_EQ(PlanCpuWeightDType(WeightDTypeChoice::kF32, hardware, hardware).dtype, DType::kF32);
    EXPECT_EQ(PlanCpuWeightDType(WeightDTypeChoice::kF16, hardware, hardware).dtype, DType::kF16);
    EXPECT_EQ(PlanCpuWeightDType(WeightDTypeChoice::kBF16, hardware, hardware).dtype, DType::kBF16);
    EXPECT_EQ(PlanCpuWeightDType(WeightDTypeChoice::kInt8, hardware, hardware).dtype, DType::kI8);
  }
}

TEST(CpuWeightDType, TheResolvedPlanMatchesThisBuild) {
  const WeightDTypePlan plan = ResolveCpuWeightDType(WeightDTypeChoice::kAuto);
#if defined(__AVX512F__) || (defined(__F16C__) && defined(__AVX__))
  EXPECT_EQ(plan.dtype, DType::kF16) << plan.reason;  // a build for F16C only runs on a CPU with it
#else
  EXPECT_EQ(plan.dtype, DType::kF32) << plan.reason;
#endif
}

TEST(CpuKvDType, AutoFollowsTheWeights) {
  EXPECT_EQ(PlanCpuKvDType(KvDTypeChoice::kAuto, DType::kF32).dtype, DType::kF32);
  for (DType narrow : {DType::kF16, DType::kBF16, DType::kI8}) {
    EXPECT_EQ(PlanCpuKvDType(KvDTypeChoice::kAuto, narrow).dtype, DType::kF16);
  }
  EXPECT_EQ(PlanCpuKvDType(KvDTypeChoice::kBF16, DType::kF32).dtype, DType::kBF16);
  EXPECT_EQ(PlanCpuKvDType(KvDTypeChoice::kF32, DType::kI8).dtype, DType::kF32);
}

}  // namespace
}  // namespace arach
