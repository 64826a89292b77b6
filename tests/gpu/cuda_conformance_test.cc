// The CUDA backend (bf16) against ../shared/fixtures refs (float32 references) for every variant:
// logits within 5e-2, the same top-1 wherever the reference's top-1/top-2 margin exceeds 0.1, greedy
// tokens identical up to the first near tie; and a batch of all four variants equal to each alone.
// Compiled with ARACH_TEST_CUDA_SIM (cuda_conformance_cuda_sim_test, label cuda-sim) the same cases run the
// CUDA backend's own kernels on the SIMT simulator (FlashInfer's attention by its host stand-in), with no GPU.
#include <algorithm>
#include <cmath>

#include "engine/runner/offline_session.h"
#include "gtest/gtest.h"
#include "tests/testing/devices.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/reduced_precision.h"

namespace arach {
namespace {

constexpr float kLogitTolerance = testing::kReducedPrecisionLogitTolerance;

#if defined(ARACH_TEST_CUDA_SIM)
#define ARACH_REQUIRE_CUDA_OR_SIMULATOR() \
  do {                                    \
  } while (0)
void UseCuda(testing::FixtureOptions& options) {
  options.device = DeviceKind::kCuda;
  options.make_backend = testing::CreateSimulatedCudaBackendFor;
}
#else
#define ARACH_REQUIRE_CUDA_OR_SIMULATOR() ARACH_REQUIRE_GPU()
void UseCuda(testing::FixtureOptions& options) { options.device = DeviceKind::kCuda; }
#endif

class CudaConformance : public ::testing::TestWithParam<testing::RefCase> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_CUDA_OR_SIMULATOR();
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.adapter = GetParam().model != "llama-stories260k";
    UseCuda(options);
    auto runner = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
    options.device = DeviceKind::kCpu;
    auto cpu = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_runner_ = std::move(*cpu);
  }
  std::unique_ptr<ModelRunner> runner_, cpu_runner_;
};

TEST_P(CudaConformance, LastLogitsOfP7AndP48) { testing::ExpectLastLogitsMatchRefs(*runner_, GetParam()); }

TEST_P(CudaConformance, AllPositionLogitsOfP7WhereReferenced) {
  if (!testing::ExpectAllPositionLogitsMatchRefs(*runner_, GetParam())) GTEST_SKIP() << "no all-position reference";
}

TEST_P(CudaConformance, GreedyP48IdenticalUpToFirstNearTie) {
  testing::ExpectGreedyMatchesRefsUpToNearTie(*runner_, *cpu_runner_, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Refs, CudaConformance, ::testing::ValuesIn(testing::ReferenceCases(/*modern=*/false)), testing::RefCaseName);

// Four variants in one batch (chunked prefill included) equal each alone, on the GPU.
TEST(CudaMixedBatch, FourVariantsTogetherEqualAlone) {
  ARACH_REQUIRE_CUDA_OR_SIMULATOR();
  ARACH_REQUIRE_FIXTURES();
  testing::FixtureOptions options;
  options.adapter = true;
  options.block_size = 4;
  options.num_blocks = 512;
  UseCuda(options);
  auto runner = testing::LoadFixtureRunner("gpt2-tiny", options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  OfflineSession session(**runner);
  const size_t vocab = (*runner)->config().vocab_size;
  const std::vector<int32_t> p48 = testing::RefPrompt("gpt2-tiny", "p48");
  const std::vector<std::vector<int32_t>> prompts = {testing::RefPrompt("gpt2-tiny", "p7"), p48,
                                                     std::vector<int32_t>(p48.begin() + 3, p48.begin() + 20)};
  const std::vector<Variant> variants = {testing::VariantOfRef("arach"), testing::VariantOfRef("skip"), testing::VariantOfRef("arach_skip")};
  auto collect = [&](const std::vector<std::vector<int32_t>>& ps, const std::vector<Variant>& vs, int chunk) {
    std::vector<std::vector<float>> out(ps.size());
    for (size_t s = 0; s < ps.size(); ++s) out[s].resize(ps[s].size() * vocab);
    const absl::Status status = session.ForEachPosition(ps, chunk, [&](int s, int position, std::span<const float> row) {
      std::copy(row.begin(), row.end(), out[s].begin() + static_cast<long>(position * vocab));
    }, vs);
    EXPECT_TRUE(status.ok()) << status;
    return out;
  };
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto alone = collect({prompts[s]}, {variants[s]}, 0)[0];
    for (int chunk : {0, 5}) {
      const auto together = collect(prompts, variants, chunk);
      // bf16 rounding differs with batch shape (GEMM tiling), so equality is to the bf16 tolerance.
      EXPECT_LT(testing::MaxAbsDiff(together[s].data(), alone.data(), alone.size()), kLogitTolerance)
          << variants[s].Name() << " chunk " << chunk;
    }
  }
}

}  // namespace
}  // namespace arach
