#include "server/request_limits.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

EngineRequest Generation(int prompt_tokens, int max_tokens, int top_logprobs) {
  EngineRequest r;
  r.prompt.assign(static_cast<size_t>(prompt_tokens), 7);
  r.sampling.max_tokens = max_tokens;
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = top_logprobs;
  return r;
}

EngineRequest Scoring(int prompt_tokens, int top_logprobs) {
  EngineRequest r;
  r.kind = RequestKind::kScore;
  r.prompt.assign(static_cast<size_t>(prompt_tokens), 7);
  r.prompt_top_logprobs = top_logprobs;
  return r;
}

TEST(AnswerLogprobs, CountsEveryTokensLogprobWithItsAlternativesAgainstTheResponseLimit) {
  RequestLimits limits;
  limits.max_response_bytes = 1 << 20;  // 65,536 log-probs at 16 bytes
  // 1000 tokens x (own + chosen + 20 alternatives) = 22,000 values: under; three such choices: 66,000: over.
  EXPECT_TRUE(CheckAnswerLogprobs(limits, {Generation(5, 1000, 20)}, "logprobs").ok());
  const absl::Status over = CheckAnswerLogprobs(limits, {Generation(5, 1000, 20), Generation(5, 1000, 20), Generation(5, 1000, 20)}, "logprobs");
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(over.message()), HasSubstr("logprobs: the answer would hold 66000 log-probs"));
  EXPECT_THAT(std::string(over.message()), HasSubstr("or stream it"));
  // Without log-probs a request carries none, however long.
  EngineRequest plain = Generation(5, 100000, 0);
  plain.sampling.logprobs = false;
  EXPECT_TRUE(CheckAnswerLogprobs(limits, {plain, plain}, "logprobs").ok());
  // A scored prompt counts its tokens (its log-probs cannot be streamed: no such hint).
  EXPECT_TRUE(CheckAnswerLogprobs(limits, {Scoring(2900, 20)}, "logprobs").ok());
  const absl::Status scored = CheckAnswerLogprobs(limits, {Scoring(3000, 20)}, "logprobs");
  EXPECT_EQ(scored.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(scored.message()), Not(HasSubstr("stream")));
  // Echo with generation: the prompt's and the generated tokens' together.
  EngineRequest echoed = Generation(2000, 1000, 20);
  echoed.sampling.prompt_logprobs = true;
  echoed.prompt_top_logprobs = 20;
  EXPECT_FALSE(CheckAnswerLogprobs(limits, {echoed}, "logprobs").ok()) << "(2000 + 1000) x 22 = 66,000";
  // Streamed: a chunk at a time, but each choice's first holds its prompt's whole: the largest such chunk counts.
  EXPECT_TRUE(CheckAnswerLogprobs(limits, {Generation(5, 100000, 20), Generation(5, 100000, 20)}, "logprobs", true).ok());
  EXPECT_TRUE(CheckAnswerLogprobs(limits, {echoed, echoed, echoed}, "logprobs", true).ok()) << "2000 x 22 = 44,000 in a chunk";
  EngineRequest long_echoed = echoed;
  long_echoed.prompt.assign(3000, 7);
  const absl::Status chunk = CheckAnswerLogprobs(limits, {echoed, long_echoed}, "logprobs", true);
  EXPECT_EQ(chunk.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(chunk.message()), HasSubstr("logprobs: a choice's first chunk would hold 66000 log-probs"));
  EXPECT_THAT(std::string(chunk.message()), HasSubstr("or a shorter prompt"));
}

// truncate_prompt_tokens keeps the prompt's last k ids (-1: the context's worth); more than the context is refused.
TEST(TruncatePrompt, KeepsTheLastTokens) {
  std::vector<int32_t> ids = {1, 2, 3, 4, 5};
  EXPECT_FALSE(*TruncatePrompt(std::nullopt, 8, ids));
  EXPECT_FALSE(*TruncatePrompt(5, 8, ids)) << "already short enough";
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_TRUE(*TruncatePrompt(2, 8, ids));
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 5}));
  std::vector<int32_t> long_ids(10, 7);
  long_ids[9] = 9;
  EXPECT_TRUE(*TruncatePrompt(-1, 4, long_ids));
  EXPECT_EQ(long_ids, (std::vector<int32_t>{7, 7, 7, 9}));
  const absl::StatusOr<bool> too_long = TruncatePrompt(9, 8, ids);
  ASSERT_FALSE(too_long.ok());
  EXPECT_THAT(std::string(too_long.status().message()), HasSubstr("truncate_prompt_tokens"));
}

}  // namespace
}  // namespace arach::server
