// The GPU's sampling (Backend::SampleTokens of the CUDA backend: our packing, logit-processing and draw kernels,
// FlashInfer's softmax and renormalisations) against the CPU sampler, the reference. Built twice: on a GPU
// (cuda_conformance_test, label gpu; skipped without one) and, with ARACH_TEST_CUDA_SIM, on the SIMT simulator
// with FlashInfer's stages by their host stand-ins (device_sampling_cuda_sim_test, label cuda-sim). Checked: greedy rows pick the same token under every logit processor; sampled rows draw the
// same token for (nearly) every counter, with the CPU's uniform, and as often as their probabilities say; a row's
// token does not depend on its batch; the log-probs are the model's; the logits are left as they were.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "gtest/gtest.h"
#include "tests/testing/devices.h"
#include "tests/testing/sampler_rows.h"

namespace arach {
namespace {

using testing::RandomRow;
using testing::Row;

class DeviceSampling : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(ARACH_TEST_CUDA_SIM)
    backend_ = testing::CreateSimulatedCudaBackend(DType::kF16);
#else
    ARACH_REQUIRE_GPU();
    BackendOptions options;
    options.weight_dtype = WeightDTypeChoice::kF16;
    absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(DeviceKind::kCuda, options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
#endif
  }

  // Samples every row on the (simulated) device; `logprobs` gets each token's log-prob when given. Expects the
  // logits left as they were.
  std::vector<int32_t> SampleOnDevice(const std::vector<SamplerInput>& rows, std::vector<float>* logprobs = nullptr) {
    const int vocab = static_cast<int>(rows.at(0).logits.size());
    std::vector<float> logits;
    for (const SamplerInput& row : rows) logits.insert(logits.end(), row.logits.begin(), row.logits.end());
    auto buffer = backend_->Allocate(logits.size() * sizeof(float));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    backend_->CopyToDevice((*buffer)->data(), logits.data(), logits.size() * sizeof(float));
    std::vector<int32_t> tokens(rows.size(), -1);
    if (logprobs != nullptr) logprobs->assign(rows.size(), 1.0f);
    const absl::Status status =
        backend_->SampleTokens(DeviceMatrix::Dense((*buffer)->data(), DType::kF32, static_cast<int64_t>(rows.size()), vocab),
                               rows, tokens, logprobs != nullptr ? std::span<float>(*logprobs) : std::span<float>());
    EXPECT_TRUE(status.ok()) << status;
    std::vector<float> after(logits.size());
    backend_->CopyToHost(after.data(), (*buffer)->data(), logits.size() * sizeof(float));
    EXPECT_EQ(after, logits) << "the device changed the logits";
    return tokens;
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(DeviceSampling, GreedyRowsPickTheCpuSamplersTokenUnderEveryProcessor) {
  Sampler cpu;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    std::mt19937 rng(seed);
    const int vocab = 300 + static_cast<int>(rng() % 700);
    std::vector<Row> rows;
    for (int r = 0; r < 4; ++r) {
      rows.push_back(RandomRow(rng, vocab));
      rows.back().params.temperature = 0.0f;  // greedy
    }
    std::vector<SamplerInput> inputs;
    for (const Row& row : rows) inputs.push_back(row.Input());
    std::vector<float> logprobs;
    const std::vector<int32_t> tokens = SampleOnDevice(inputs, &logprobs);
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(tokens[r], cpu.Sample(inputs[r]).token) << "seed " << seed << " row " << r;
      // The log-prob is the model's (the unprocessed logits'), as RawLogprobs gives it on the host.
      EXPECT_NEAR(logprobs[r], RawLogprobs(inputs[r].logits, tokens[r], 0).logprob, 1e-4) << "seed " << seed << " row " << r;
    }
  }
}

TEST_F(DeviceSampling, GreedyTiesGoToTheLowestId) {
  Row row;
  row.logits.assign(600, -1.0f);
  row.logits[411] = row.logits[97] = row.logits[530] = row.logits[353] = 2.5f;  // 97 and 353: 256 apart (one GPU thread)
  row.params.temperature = 0.0f;
  EXPECT_EQ(SampleOnDevice({row.Input()}), std::vector<int32_t>{97});
}

// Parameters of a sampled row: temperature, top-k, top-p and min-p in the combinations users send.
Row SampledRow(std::mt19937& rng, int vocab, int variant) {
  Row row;
  std::normal_distribution<float> normal(0.0f, 2.5f);
  for (int t = 0; t < vocab; ++t) row.logits.push_back(normal(rng));
  const float temperatures[] = {0.6f, 1.0f, 1.4f};
  row.params.temperature = temperatures[variant % 3];
  const int top_ks[] = {0, 8, 50};
  row.params.top_k = top_ks[(variant / 3) % 3];
  const float top_ps[] = {1.0f, 0.9f, 0.5f};
  row.params.top_p = top_ps[(variant / 9) % 3];
  row.params.min_p = variant % 2 == 0 ? 0.0f : 0.05f;
  if (variant % 5 == 0) row.params.logit_bias.push_back({static_cast<int32_t>(rng() % vocab), 4.0f});
  return row;
}

TEST_F(DeviceSampling, SampledRowsDrawTheCpuSamplersTokenWithTheSameSeedAndCounter) {
  Sampler cpu;
  int draws = 0, same = 0;
  for (int variant = 0; variant < 27; ++variant) {
    std::mt19937 rng(100 + variant);
    const int vocab = 200 + static_cast<int>(rng() % 600);
    const Row row = SampledRow(rng, vocab, variant);
    std::vector<SamplerInput> inputs;
    for (int counter = 0; counter < 12; ++counter) {  // one batch: the same row at 12 points of its generation
      SamplerInput in = row.Input();
      in.seed = 7000 + variant;
      in.num_generated = counter;
      inputs.push_back(in);
    }
    const std::vector<int32_t> tokens = SampleOnDevice(inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      ++draws;
      same += tokens[i] == cpu.Sample(inputs[i]).token;
    }
  }
  // Only a draw within float rounding of a boundary between two tokens may differ (device_sampling.h).
  EXPECT_GE(same, draws - 3) << same << " of " << draws << " draws equal";
}

TEST_F(DeviceSampling, DrawsFollowTheDistribution) {
  // 400 draws of one row (temperature 1, top-k 4): each of the 4 kept tokens about as often as its probability.
  std::mt19937 rng(5);
  Row row = SampledRow(rng, 256, 0);
  row.params.temperature = 1.0f;
  row.params.top_k = 4;
  std::vector<float> sorted = row.logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  double total = 0.0;
  for (int i = 0; i < 4; ++i) total += std::exp(sorted[i] - sorted[0]);
  std::vector<SamplerInput> inputs;
  for (int counter = 0; counter < 400; ++counter) {
    SamplerInput in = row.Input();
    in.seed = 11;
    in.num_generated = counter;
    inputs.push_back(in);
  }
  const std::vector<int32_t> tokens = SampleOnDevice(inputs);
  for (int i = 0; i < 4; ++i) {
    const int token = static_cast<int>(std::find(row.logits.begin(), row.logits.end(), sorted[i]) - row.logits.begin());
    const double p = std::exp(sorted[i] - sorted[0]) / total;
    const double count = static_cast<double>(std::count(tokens.begin(), tokens.end(), token));
    EXPECT_NEAR(count / 400.0, p, 4.0 * std::sqrt(p * (1.0 - p) / 400.0) + 0.01) << "token " << token;
  }
  for (int32_t token : tokens) {
    EXPECT_GE(row.logits[token], sorted[3]) << "a token outside the top 4 was drawn";
  }
}

TEST_F(DeviceSampling, ARowsTokenDoesNotDependOnItsBatch) {
  std::mt19937 rng(9);
  const int vocab = 500;
  const Row target = SampledRow(rng, vocab, 13);
  std::vector<Row> others;
  for (int i = 0; i < 4; ++i) others.push_back(i % 2 == 0 ? SampledRow(rng, vocab, 4 + i) : RandomRow(rng, vocab));
  for (int counter = 0; counter < 8; ++counter) {
    SamplerInput in = target.Input();
    in.seed = 99;
    in.num_generated = counter;
    const int32_t alone = SampleOnDevice({in})[0];
    std::vector<SamplerInput> batch;
    for (const Row& other : others) {
      batch.push_back(other.Input());
      batch.back().seed = 1234 + counter;
    }
    batch.insert(batch.begin() + 3, in);
    EXPECT_EQ(SampleOnDevice(batch)[3], alone) << "counter " << counter;
  }
}

TEST_F(DeviceSampling, RefusesMismatchedShapes) {
  std::mt19937 rng(3);
  const Row row = RandomRow(rng, 100);
  std::vector<SamplerInput> inputs = {row.Input(), row.Input()};
  auto buffer = backend_->Allocate(100 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  std::vector<int32_t> tokens(2);
  const absl::Status status = backend_->SampleTokens(DeviceMatrix::Dense((*buffer)->data(), DType::kF32, 1, 100), inputs, tokens);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("sample tokens"), std::string::npos) << status;
}

}  // namespace
}  // namespace arach
