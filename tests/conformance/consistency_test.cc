// The same prompts give the same logits whether run alone, in one batch of mixed lengths, or prefilled
// in chunks and then decoded token by token through the paged KV cache; and the greedy continuation is the
// same chunked and batched.
#include <cmath>

#include "engine/core/mapped_file.h"
#include "engine/runner/offline_session.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::MaxAbsDiff;
using testing::RefPrompt;

class Consistency : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    // Block size 4 makes every prompt span several blocks.
    auto runner = testing::LoadFixtureRunner(GetParam(), /*num_blocks=*/512, /*block_size=*/4);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  std::unique_ptr<ModelRunner> runner_;
};

// Logits of every position of each prompt, all prompts in one batch, `chunk` tokens per step.
std::vector<std::vector<float>> BatchedLogits(OfflineSession& session, const std::vector<std::vector<int32_t>>& prompts,
                                              int chunk, int vocab) {
  std::vector<std::vector<float>> out(prompts.size());
  for (size_t s = 0; s < prompts.size(); ++s) out[s].resize(prompts[s].size() * vocab);
  const absl::Status status = session.ForEachPosition(prompts, chunk, [&](int s, int position, std::span<const float> row) {
    std::copy(row.begin(), row.end(), out[s].begin() + static_cast<size_t>(position) * vocab);
  });
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

// Each position's target: the token after it, and none (-1) after the last.
std::vector<std::vector<int32_t>> NextTokenTargets(const std::vector<std::vector<int32_t>>& prompts) {
  std::vector<std::vector<int32_t>> targets;
  for (const auto& prompt : prompts) {
    targets.emplace_back(prompt.begin() + 1, prompt.end());
    targets.back().push_back(-1);
  }
  return targets;
}

TEST_P(Consistency, AloneBatchedChunkedAndDecodedAgree) {
  OfflineSession session(*runner_);
  const int vocab = runner_->config().vocab_size;
  const std::vector<int32_t> p48 = RefPrompt(GetParam(), "p48");
  const std::vector<std::vector<int32_t>> prompts = {
      RefPrompt(GetParam(), "p7"), p48, std::vector<int32_t>(p48.begin() + 5, p48.begin() + 30), {p48[3]}};

  std::vector<std::vector<float>> alone;
  for (const auto& prompt : prompts) alone.push_back(BatchedLogits(session, {prompt}, 0, vocab)[0]);
  for (int chunk : {0, 1, 3, 16}) {  // 0: one-shot prefill; 1: token-by-token decode through the cache
    const auto batched = BatchedLogits(session, prompts, chunk, vocab);
    for (size_t s = 0; s < prompts.size(); ++s) {
      EXPECT_LT(MaxAbsDiff(batched[s].data(), alone[s].data(), alone[s].size()), 1e-4f)
          << "prompt " << s << " chunk " << chunk;
    }
  }
  EXPECT_EQ(session.allocator().num_free(), session.allocator().num_blocks()) << "blocks leaked";
}

TEST_P(Consistency, PositionsScoredOnTheDeviceMatchTheirRowsBatchedAndChunked) {
  OfflineSession session(*runner_);
  const int vocab = runner_->config().vocab_size;
  const std::vector<int32_t> p48 = RefPrompt(GetParam(), "p48");
  const std::vector<std::vector<int32_t>> prompts = {RefPrompt(GetParam(), "p7"), p48};
  std::vector<std::vector<int32_t>> targets = NextTokenTargets(prompts);
  const auto rows = BatchedLogits(session, prompts, 0, vocab);
  for (int chunk : {0, 5}) {
    std::vector<std::vector<RowScore>> scored(prompts.size());
    for (size_t s = 0; s < prompts.size(); ++s) scored[s].resize(prompts[s].size());
    const absl::Status status = session.ScoreEachPosition(prompts, targets, chunk, [&](int s, int position, const RowScore& score) {
      scored[s][position] = score;
    });
    ASSERT_TRUE(status.ok()) << status;
    for (size_t s = 0; s < prompts.size(); ++s) {
      for (size_t p = 0; p < prompts[s].size(); ++p) {
        const RowScore want = ScoreRow(std::span<const float>(rows[s]).subspan(p * vocab, vocab), targets[s][p]);
        EXPECT_NEAR(scored[s][p].logprob, want.logprob, 1e-4) << "prompt " << s << " position " << p << " chunk " << chunk;
        EXPECT_EQ(scored[s][p].argmax, want.argmax) << "prompt " << s << " position " << p << " chunk " << chunk;
        EXPECT_EQ(scored[s][p].rank, want.rank) << "prompt " << s << " position " << p << " chunk " << chunk;
      }
    }
  }
  targets[0][0] = vocab;
  const absl::Status outside = session.ScoreEachPosition(prompts, targets, 0, [](int, int, const RowScore&) {});
  EXPECT_EQ(outside.code(), absl::StatusCode::kInvalidArgument) << outside;
  EXPECT_NE(outside.message().find("outside the vocabulary"), std::string::npos) << outside;
  targets[1].pop_back();
  const absl::Status uneven = session.ScoreEachPosition(prompts, targets, 0, [](int, int, const RowScore&) {});
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument) << uneven;
  EXPECT_EQ(session.allocator().num_free(), session.allocator().num_blocks()) << "blocks leaked";
}

// One step that samples a row, returns another sequence's last row and scores every row of both with alternatives
// gives the same scores whether the scored rows' logits are computed all at once, three rows at a time or one by one
// (ModelRunner::set_scored_logits_bytes), and each score is the host's ScoreRow of the row's logits.
TEST_P(Consistency, RowsScoredInBlocksOfAnySizeScoreAlike) {
  const int vocab = runner_->config().vocab_size;
  OfflineSession session(*runner_);
  const std::vector<std::vector<int32_t>> prompts = {RefPrompt(GetParam(), "p48"), RefPrompt(GetParam(), "p7")};
  const auto rows = BatchedLogits(session, prompts, 0, vocab);
  std::vector<std::vector<int32_t>> targets = NextTokenTargets(prompts);
  constexpr int kTopN = 3;
  const size_t row_bytes = static_cast<size_t>(vocab) * sizeof(float);
  for (const size_t block_bytes : {size_t{128} << 20, 3 * row_bytes, size_t{1}}) {
    runner_->set_scored_logits_bytes(block_bytes);
    BlockAllocator allocator(runner_->kv_cache().num_blocks());
    std::vector<BlockTable> tables(prompts.size(), BlockTable(runner_->kv_cache().block_size()));
    ForwardBatch batch;
    for (size_t s = 0; s < prompts.size(); ++s) {
      ASSERT_TRUE(tables[s].Reserve(static_cast<int>(prompts[s].size()), allocator).ok());
      SequenceInput input;
      input.tokens = prompts[s];
      input.block_table = &tables[s];
      input.logits = s == 1 ? LogitsMode::kLast : LogitsMode::kNone;
      input.score_targets = targets[s];
      input.score_top_n = kTopN;
      batch.sequences.push_back(input);
    }
    ForwardOutput out;
    const absl::Status executed = runner_->Execute(batch, out);
    ASSERT_TRUE(executed.ok()) << executed;
    const std::vector<float>& last = rows[1];
    ASSERT_EQ(out.Row(1, 0).size(), static_cast<size_t>(vocab));
    EXPECT_LT(MaxAbsDiff(out.Row(1, 0).data(), last.data() + (prompts[1].size() - 1) * vocab, vocab), 1e-4f);
    for (size_t s = 0; s < prompts.size(); ++s) {
      const std::span<const RowScore> scores = out.ScoresOf(static_cast<int>(s));
      ASSERT_EQ(scores.size(), prompts[s].size());
      for (size_t p = 0; p < prompts[s].size(); ++p) {
        std::vector<TokenLogprob> want_top(kTopN);
        const RowScore want = ScoreRow(std::span<const float>(rows[s]).subspan(p * vocab, vocab), targets[s][p], want_top);
        const std::string where = "prompt " + std::to_string(s) + " position " + std::to_string(p) + " block bytes " +
                                  std::to_string(block_bytes);
        EXPECT_NEAR(scores[p].logprob, want.logprob, 1e-4) << where;
        EXPECT_EQ(scores[p].argmax, want.argmax) << where;
        EXPECT_EQ(scores[p].rank, want.rank) << where;
        const std::span<const TokenLogprob> top = out.TopOf(static_cast<int>(s), static_cast<int>(p), kTopN);
        for (int k = 0; k < kTopN; ++k) {
          EXPECT_EQ(top[k].token, want_top[k].token) << where << " alternative " << k;
          EXPECT_NEAR(top[k].logprob, want_top[k].logprob, 1e-4) << where << " alternative " << k;
        }
      }
    }
    for (BlockTable& table : tables) table.ReleaseAll(allocator);
  }
}

TEST_P(Consistency, GreedyIsTheSameChunkedAndBatched) {
  OfflineSession session(*runner_);
  const std::vector<int32_t> p48 = RefPrompt(GetParam(), "p48");
  const auto expected = testing::RefsJson()["models"][GetParam()]["variants"]["base"]["greedy_p48_32"].get<std::vector<int32_t>>();
  GreedyOptions options;
  options.max_new_tokens = 32;
  options.prefill_chunk = 5;
  auto out = session.GenerateGreedy({RefPrompt(GetParam(), "p7"), p48, {p48[0], p48[1]}}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1], expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Consistency, ::testing::Values("gpt2-tiny", "neox-tiny", "llama-stories260k"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

TEST(LlamaStory, GreedyFromBosMatchesTheReference) {
  ARACH_REQUIRE_FIXTURES();
  auto runner = testing::LoadFixtureRunner("llama-stories260k");
  ASSERT_TRUE(runner.ok()) << runner.status();
  OfflineSession session(**runner);
  const auto expected = testing::RefsJson()["notes"]["llama_greedy_from_bos_60"].get<std::vector<int32_t>>();
  GreedyOptions options;
  options.max_new_tokens = static_cast<int>(expected.size()) - 1;
  auto out = session.GenerateGreedy({{1}}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], std::vector<int32_t>(expected.begin() + 1, expected.end()));
}

}  // namespace
}  // namespace arach
