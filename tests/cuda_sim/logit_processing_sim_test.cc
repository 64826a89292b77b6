// The GPU's logit processors (cuda_logit_processing.cu on the SIMT simulator, fed by LogitProcessingBatch)
// against the CPU sampler's (ApplyLogitProcessors) on random rows: biases, repetition, presence and frequency
// penalties, structured-output masks, min_tokens suppression, including the row where suppression would leave
// nothing and is undone.
#include <cmath>
#include <random>

#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/logit_processing.h"
#include "gtest/gtest.h"
#include "tests/testing/sampler_rows.h"

namespace arach {
namespace {

using testing::RandomRow;
using testing::Row;

// Runs the kernel on `rows` and expects each row to equal ApplyLogitProcessors'.
void ExpectSameAsCpu(const std::vector<Row>& rows, const std::string& what) {
  cuda::LogitProcessingBatch batch;
  std::vector<float> logits;
  for (const Row& row : rows) {
    batch.Add(row.Input(), static_cast<int>(row.logits.size()));
    logits.insert(logits.end(), row.logits.begin(), row.logits.end());
  }
  cuda::LogitProcessingArgs args;  // the simulator's device memory is the host's
  args.rows = batch.rows;
  args.vocab = batch.vocab;
  args.bias_start = batch.bias_start.data();
  args.bias_token = batch.bias_token.data();
  args.bias_value = batch.bias_value.data();
  args.repetition_penalty = batch.repetition_penalty.data();
  args.repeated_start = batch.repeated_start.data();
  args.repeated_token = batch.repeated_token.data();
  args.presence_penalty = batch.presence_penalty.data();
  args.frequency_penalty = batch.frequency_penalty.data();
  args.generated_start = batch.generated_start.data();
  args.generated_token = batch.generated_token.data();
  args.generated_count = batch.generated_count.data();
  args.allowed_word_start = batch.allowed_word_start.data();
  args.allowed_words = batch.allowed_words.data();
  args.suppressed_start = batch.suppressed_start.data();
  args.suppressed_token = batch.suppressed_token.data();
  const std::vector<float> raw = logits;
  // Out of place into `logits` from a copy, then in place on a second copy: the two uses of the kernel.
  cuda::LaunchProcessLogits(args, raw.data(), logits.data(), nullptr);
  ASSERT_EQ(simt::TakeFailure(), "");
  std::vector<float> in_place = raw;
  cuda::LaunchProcessLogits(args, in_place.data(), in_place.data(), nullptr);
  ASSERT_EQ(in_place, logits);
  ASSERT_EQ(simt::TakeFailure(), "");
  std::vector<float> want;
  for (size_t r = 0; r < rows.size(); ++r) {
    ApplyLogitProcessors(rows[r].Input(), want);
    for (size_t t = 0; t < want.size(); ++t) {
      const float got = logits[r * want.size() + t];
      if (std::isinf(want[t])) {
        ASSERT_EQ(got, want[t]) << what << " row " << r << " token " << t;
      } else {
        ASSERT_NEAR(got, want[t], 1e-5f * (1.0f + std::fabs(want[t]))) << what << " row " << r << " token " << t;
      }
    }
  }
}

TEST(LogitProcessingKernel, MatchesTheCpuSamplerOnRandomRows) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const int vocab = 300 + static_cast<int>(rng() % 900);
    std::vector<Row> rows;
    const int count = 1 + static_cast<int>(rng() % 5);
    for (int r = 0; r < count; ++r) rows.push_back(RandomRow(rng, vocab));
    ExpectSameAsCpu(rows, "seed " + std::to_string(seed));
  }
}

TEST(LogitProcessingKernel, SuppressionThatWouldLeaveNothingIsUndone) {
  std::mt19937 rng(7);
  Row only_stops = RandomRow(rng, 200);
  only_stops.allowed.assign((200 + 31) / 32, 0u);
  only_stops.allowed[0] = 1u << 5;  // the constraint allows token 5 alone, a stop token
  only_stops.suppressed = {5};
  only_stops.params.min_tokens = only_stops.num_generated + 1;
  Row other_left = only_stops;
  other_left.allowed[0] |= 1u << 9;  // token 9 is allowed too: the stop token is masked
  ExpectSameAsCpu({only_stops, other_left}, "suppression");
  std::vector<float> want;
  ApplyLogitProcessors(only_stops.Input(), want);
  EXPECT_FALSE(std::isinf(want[5])) << "the reference keeps the only allowed token";
  ApplyLogitProcessors(other_left.Input(), want);
  EXPECT_TRUE(std::isinf(want[5]));
}

}  // namespace
}  // namespace arach
