// The CPU backend's SampleTokens: the host's Sampler on each row where the logits are, rows in parallel on the
// backend's threads: every row's token and log-prob equal Sampler::Sample's on the same row and input.
#include <memory>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/sampling/sampler.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

TEST(CpuSampleTokens, EachRowIsTheSamplersDraw) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 2});
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_TRUE((*backend)->samples_on_device());
  constexpr int kRows = 24;
  constexpr int kVocab = 3000;
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(kRows) * kVocab);
  for (float& v : logits) v = normal(rng);
  auto buffer = (*backend)->Allocate(logits.size() * sizeof(float));
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  (*backend)->CopyToDevice((*buffer)->data(), logits.data(), logits.size() * sizeof(float));

  std::vector<SamplingParams> params(kRows);
  const std::vector<int32_t> context = {5, 9, 9, 17, 2999};
  std::vector<uint32_t> allowed((kVocab + 31) / 32, 0xF0F0F0F0u);
  std::vector<SamplerInput> rows(kRows);
  for (int r = 0; r < kRows; ++r) {
    SamplingParams& p = params[r];
    p.temperature = r % 5 == 0 ? 0.0f : 0.5f + 0.1f * static_cast<float>(r % 7);
    p.top_k = r % 3 == 0 ? 20 : 0;
    p.top_p = r % 4 == 1 ? 0.8f : 1.0f;
    p.min_p = r % 6 == 2 ? 0.1f : 0.0f;
    p.repetition_penalty = r % 2 == 0 ? 1.2f : 1.0f;
    p.frequency_penalty = r % 3 == 1 ? 0.5f : 0.0f;
    p.logprobs = r % 2 == 1;
    SamplerInput& in = rows[r];
    in.params = &p;
    in.context = context;
    in.num_generated = r % 3;
    in.seed = 100 + static_cast<uint64_t>(r);
    if (r % 8 == 3) in.allowed = allowed;
    in.wants_logprob = r % 4 == 2;
  }
  std::vector<int32_t> tokens(kRows, -1);
  std::vector<float> logprobs(kRows, 1.0f);
  const DeviceMatrix matrix = DeviceMatrix::Dense((*buffer)->data(), DType::kF32, kRows, kVocab);
  ASSERT_TRUE((*backend)->SampleTokens(matrix, rows, tokens, logprobs).ok());

  Sampler sampler;
  int sampled_differently = 0;
  for (int r = 0; r < kRows; ++r) {
    SamplerInput in = rows[r];
    in.logits = std::span<const float>(logits).subspan(static_cast<size_t>(r) * kVocab, kVocab);
    const SampledToken expected = sampler.Sample(in);
    EXPECT_EQ(tokens[r], expected.token) << "row " << r;
    EXPECT_EQ(logprobs[r], expected.logprob) << "row " << r;
    if (params[r].logprobs || rows[r].wants_logprob) {
      EXPECT_LT(logprobs[r], 0.0f) << "row " << r << ": asked for";
    } else {
      EXPECT_EQ(logprobs[r], 0.0f) << "row " << r << ": not asked for";
    }
    if (!rows[r].allowed.empty()) {
      EXPECT_NE(allowed[static_cast<size_t>(tokens[r]) / 32] >> (tokens[r] % 32) & 1u, 0u) << "row " << r << ": within the mask";
    }
    sampled_differently += tokens[r] != tokens[0] ? 1 : 0;
  }
  EXPECT_GT(sampled_differently, kRows / 2) << "the rows' own draws";
}

}  // namespace
}  // namespace arach
