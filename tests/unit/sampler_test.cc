// The sampler's rules on small hand-made distributions, and the incremental detokenizer.
#include "engine/sampling/sampler.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "engine/output/detokenizer.h"
#include "engine/sampling/logprobs.h"
#include "tools/make_model/synthetic_tokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

SampledToken Draw(const std::vector<float>& logits, const SamplingParams& p, int index, uint64_t seed = 7,
                  std::vector<int32_t> context = {}, std::vector<int32_t> suppressed = {}) {
  Sampler sampler;
  SamplerInput in;
  in.logits = logits;
  in.params = &p;
  in.context = context;
  in.num_generated = index;
  in.seed = seed;
  in.suppressed = suppressed;
  return sampler.Sample(in);
}

std::map<int32_t, int> Histogram(const std::vector<float>& logits, const SamplingParams& p, int draws) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < draws; ++i) ++counts[Draw(logits, p, i).token];
  return counts;
}

TEST(Sampler, GreedyTakesTheArgmax) {
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_EQ(Draw({0.1f, 3.0f, 2.9f}, p, 0).token, 1);
}

// A token's rank: 1 + the tokens strictly more likely (ties share a rank, as vLLM counts).
TEST(Sampler, RankCountsTheMoreLikelyTokens) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f, 2.0f};
  EXPECT_EQ(RankOf(logits, 1), 1);
  EXPECT_EQ(RankOf(logits, 2), 1);
  EXPECT_EQ(RankOf(logits, 4), 3);
  EXPECT_EQ(RankOf(logits, 0), 4);
  EXPECT_EQ(RankOf(logits, 3), 5);
}

TEST(Sampler, SameSeedAndIndexSameToken) {
  SamplingParams p;
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f, 0.2f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(Draw(logits, p, i, 42).token, Draw(logits, p, i, 42).token);
  int differ = 0;
  for (int i = 0; i < 50; ++i) differ += Draw(logits, p, i, 42).token != Draw(logits, p, i, 43).token;
  EXPECT_GT(differ, 10) << "another seed gives other draws";
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  SamplingParams p;
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  const auto counts = Histogram(logits, p, 20000);
  EXPECT_NEAR(counts.at(0) / 20000.0, 0.5, 0.02);
  EXPECT_NEAR(counts.at(1) / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(counts.at(2) / 20000.0, 0.2, 0.02);
}

TEST(Sampler, TopKTopPAndMinPCutTheTail) {
  const std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  SamplingParams k;
  k.top_k = 2;
  auto counts = Histogram(logits, k, 3000);
  EXPECT_EQ(counts.count(2) + counts.count(3), 0u);
  SamplingParams top_p;
  top_p.top_p = 0.65f;  // 0.4 + 0.3 reaches it
  counts = Histogram(logits, top_p, 3000);
  EXPECT_EQ(counts.count(2) + counts.count(3), 0u);
  EXPECT_GT(counts[1], 0);
  SamplingParams min_p;
  min_p.min_p = 0.4f;  // keeps p >= 0.16
  counts = Histogram(logits, min_p, 3000);
  EXPECT_EQ(counts.count(3), 0u);
  EXPECT_GT(counts[2], 0);
}

TEST(Sampler, TopPOverALargeVocabulary) {
  std::vector<float> logits(50000, 0.0f);
  logits[123] = 20.0f;  // ~all the mass
  SamplingParams p;
  p.top_p = 0.9f;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Draw(logits, p, i).token, 123);
}

TEST(Sampler, RepetitionPenaltyAndMinTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  EXPECT_EQ(Draw({2.0f, 1.5f}, p, 0, 0, {0}).token, 1) << "2.0 / 2 < 1.5";
  SamplingParams m;
  m.temperature = 0.0f;
  m.min_tokens = 2;
  EXPECT_EQ(Draw({5.0f, 1.0f}, m, 1, 0, {}, {0}).token, 1) << "the stop token is masked before min_tokens";
  EXPECT_EQ(Draw({5.0f, 1.0f}, m, 2, 0, {}, {0}).token, 0);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesCountOnlyGeneratedTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.presence_penalty = 1.0f;
  // Context = prompt {0} + generated {0}: token 0 was generated once -> 3.0 - 1.0 = 2.0 < 2.5.
  EXPECT_EQ(Draw({3.0f, 2.5f}, p, 1, 0, {0, 0}).token, 1);
  // Only the prompt holds token 0 (nothing generated yet): no penalty.
  EXPECT_EQ(Draw({3.0f, 2.5f}, p, 0, 0, {0}).token, 0);
  SamplingParams f;
  f.temperature = 0.0f;
  f.frequency_penalty = 0.3f;
  // Token 0 generated twice: 3.0 - 0.6 = 2.4 < 2.5; once: 2.7 > 2.5.
  EXPECT_EQ(Draw({3.0f, 2.5f}, f, 2, 0, {1, 0, 0}).token, 1);
  EXPECT_EQ(Draw({3.0f, 2.5f}, f, 1, 0, {1, 0}).token, 0);
  f.frequency_penalty = -2.0f;  // negative values encourage repeats
  EXPECT_EQ(Draw({3.0f, 4.5f}, f, 1, 0, {1, 0}).token, 0) << "3.0 + 2.0 > 4.5";
}

TEST(Sampler, LogitBiasShiftsTheLogitAndMinusHundredBansTheToken) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{1, 2.0f}};
  EXPECT_EQ(Draw({3.0f, 1.5f}, p, 0).token, 1) << "1.5 + 2 > 3";
  SamplingParams ban;
  ban.temperature = 1.0f;
  ban.logit_bias = {{0, -100.0f}};
  for (int i = 0; i < 200; ++i) ASSERT_NE(Draw({5.0f, 0.0f, 0.0f}, ban, i).token, 0);
  p.logprobs = true;
  const SampledToken t = Draw({3.0f, 1.5f}, p, 0);
  EXPECT_NEAR(t.logprob, LogSoftmaxAt(std::vector<float>{3.0f, 1.5f}, 1), 1e-6) << "log-probs stay those of the raw model";
}

TEST(Sampler, LogprobsComeFromTheRawDistribution) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = true;
  p.top_logprobs = 2;
  const SampledToken t = Draw({std::log(0.6f), std::log(0.3f), std::log(0.1f)}, p, 0);
  EXPECT_EQ(t.token, 0);
  EXPECT_NEAR(t.logprob, std::log(0.6f), 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[1].token, 1);
  EXPECT_NEAR(t.top[1].logprob, std::log(0.3f), 1e-6);
}

// The structured-output mask: bit t of word t / 32 allows token t.
TEST(Sampler, TheAllowedMaskKeepsOnlyAllowedTokensButLogprobsStayRaw) {
  std::vector<float> logits(40, 0.0f);
  logits[3] = 10.0f;                             // the model's favourite, not allowed
  const std::vector<uint32_t> allowed = {0, 1u << (33 - 32)};  // token 33 only
  SamplingParams p;
  p.logprobs = true;
  for (float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    Sampler sampler;
    SamplerInput in;
    in.logits = logits;
    in.params = &p;
    in.allowed = allowed;
    for (int i = 0; i < 20; ++i) {
      in.num_generated = i;
      const SampledToken t = sampler.Sample(in);
      EXPECT_EQ(t.token, 33);
      EXPECT_LT(t.logprob, -9.0f) << "the log-prob is the raw model's, not the masked distribution's";
    }
  }
}

TEST(Sampler, WhereTheMaskAllowsOnlyAStopTokenMinTokensYields) {
  const std::vector<float> logits(8, 0.0f);
  const std::vector<uint32_t> only_eos = {1u << 7};
  SamplingParams p;
  p.min_tokens = 5;
  Sampler sampler;
  SamplerInput in;
  in.logits = logits;
  in.params = &p;
  in.allowed = only_eos;
  const std::vector<int32_t> suppressed = {7};
  in.suppressed = suppressed;
  EXPECT_EQ(sampler.Sample(in).token, 7) << "the constraint is complete: the output must end";
  const std::vector<uint32_t> eos_or_two = {(1u << 7) | (1u << 2)};
  in.allowed = eos_or_two;
  for (int i = 0; i < 10; ++i) {
    in.seed = static_cast<uint64_t>(i);
    EXPECT_EQ(sampler.Sample(in).token, 2) << "min_tokens still suppresses the stop token while another is allowed";
  }
}

// A Sampler reused across rows (as each backend thread's is) draws what a fresh one draws, whether a row's logits
// go through processors (into the sampler's work row) or are read as they are, and whatever the row before was.
TEST(Sampler, AReusedSamplerDrawsAsAFreshOneWithAndWithoutProcessors) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Sampler reused;
  for (int row = 0; row < 48; ++row) {
    std::vector<float> logits(row % 3 == 0 ? 40 : 300);
    for (float& v : logits) v = normal(rng);
    SamplingParams p;
    p.temperature = row % 4 == 0 ? 0.0f : 0.8f;
    p.top_p = row % 5 == 0 ? 0.7f : 1.0f;
    if (row % 2 == 0) p.logit_bias = {{row % 40, 6.0f}};  // the processed rows
    SamplerInput in;
    in.logits = logits;
    in.params = &p;
    in.num_generated = row;
    in.seed = 11;
    Sampler fresh;
    EXPECT_EQ(reused.Sample(in).token, fresh.Sample(in).token) << "row " << row;
  }
}

TEST(SamplingParams, ValidationNamesTheField) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_NE(std::string(p.Validate(10).message()).find("top_p"), std::string::npos);
  p = SamplingParams{};
  p.stop_token_ids = {3, 10};
  EXPECT_NE(std::string(p.Validate(10).message()).find("stop_token_ids[1]"), std::string::npos);
  p = SamplingParams{};
  p.max_tokens = 0;
  EXPECT_NE(std::string(p.Validate(10).message()).find("max_tokens"), std::string::npos) << "scoring is a request kind, not max_tokens 0";
  p.prompt_logprobs = true;
  EXPECT_FALSE(p.Validate(10).ok());
  p = SamplingParams{};
  p.temperature = -1.0f;
  const auto api_names = [](absl::string_view field) { return absl::StrCat("sampling.", field); };
  EXPECT_EQ(p.Validate(10, api_names).message(), "sampling.temperature: -1 must be >= 0") << "the caller names the field";
  p = SamplingParams{};
  p.presence_penalty = 2.5f;
  EXPECT_NE(std::string(p.Validate(10).message()).find("presence_penalty"), std::string::npos);
  p = SamplingParams{};
  p.frequency_penalty = -2.5f;
  EXPECT_NE(std::string(p.Validate(10).message()).find("frequency_penalty"), std::string::npos);
  p = SamplingParams{};
  p.logit_bias = {{12, 1.0f}};
  EXPECT_EQ(p.Validate(10).message(), "logit_bias: token id 12 is outside the vocabulary [0, 10)");
  p.logit_bias = {{2, 101.0f}};
  EXPECT_EQ(p.Validate(10).message(), "logit_bias: bias 101 must be in [-100, 100]");
  p.logit_bias.assign(SamplingParams::kMaxLogitBias + 1, {1, 1.0f});
  EXPECT_NE(std::string(p.Validate(10).message()).find("limit of 300"), std::string::npos);
}

class DetokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteSyntheticTokenizer(dir_.path(), 400, 3).ok());
    auto tok = LoadTokenizer(dir_.path());
    ASSERT_TRUE(tok.ok());
    tokenizer_ = std::move(*tok);
  }
  // Byte tokens: the synthetic vocabulary's ids 0..255 are the bytes themselves.
  static std::vector<int32_t> Bytes(const std::string& s) { return std::vector<int32_t>(s.begin(), s.end()); }
  testing::ScopedTempDir dir_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(DetokenizerTest, NeverSplitsAUtf8Character) {
  IncrementalDetokenizer d(*tokenizer_, {});
  std::string all;
  for (int32_t b : Bytes("a\xe2\x82\xac" "b")) {  // "a€b", one byte per token
    auto delta = d.Add(static_cast<uint8_t>(b));
    ASSERT_TRUE(delta.ok());
    EXPECT_EQ(CompleteUtf8Prefix(*delta), delta->size()) << "a delta ended inside a character";
    all += *delta;
  }
  EXPECT_EQ(all + d.Flush(), "a\xe2\x82\xac" "b");
}

TEST_F(DetokenizerTest, StopStringEndsTheTextAndIsHeldBackMeanwhile) {
  IncrementalDetokenizer d(*tokenizer_, {"END"});
  std::string all;
  for (int32_t b : Bytes("xyENzEND tail")) {
    auto delta = d.Add(b);
    ASSERT_TRUE(delta.ok());
    all += *delta;
    if (d.stopped()) break;
  }
  EXPECT_TRUE(d.stopped());
  EXPECT_EQ(all + d.Flush(), "xyENz");
  EXPECT_EQ(d.matched_stop(), "END");
}

// include_stop_str_in_output: the text runs to the end of the stop string and no further (the rest of the token
// that completes it is cut all the same); the earlier partial match "EN" is released when it fails.
TEST_F(DetokenizerTest, AStopStringKeptInTheTextEndsItJustAfter) {
  const std::vector<int32_t> prompt;
  IncrementalDetokenizer d(*tokenizer_, {"END", "zE"}, prompt, /*skip_special_tokens=*/false, /*include_stop_string=*/true);
  std::string all;
  for (int32_t b : Bytes("xyENwEND tail")) {
    auto delta = d.Add(b);
    ASSERT_TRUE(delta.ok());
    all += *delta;
    if (d.stopped()) break;
    EXPECT_EQ(all.find("EN", 4), std::string::npos) << "a possible stop string is held back until it is whole";
  }
  ASSERT_TRUE(d.stopped());
  EXPECT_EQ(all + d.Flush(), "xyENwEND");
  EXPECT_EQ(d.matched_stop(), "END");
  // Several bytes in one token: what follows the stop string within the token is cut.
  IncrementalDetokenizer whole(*tokenizer_, {"END"}, prompt, false, true);
  std::string text;
  for (int32_t b : Bytes("abEND")) text += *whole.Add(b);
  EXPECT_EQ(text + whole.Flush(), "abEND");
}

TEST_F(DetokenizerTest, MalformedBytesBecomeReplacementCharacters) {
  IncrementalDetokenizer d(*tokenizer_, {});
  std::string all;
  for (int32_t b : {0x61, 0x80, 0x62}) all += *d.Add(b);  // a, a lone continuation byte, b
  all += d.Flush();
  EXPECT_EQ(all, "a\xef\xbf\xbd" "b");
}

// The normaliser of every log-prob the server returns (scoring, prompt log-probs, sampled tokens' log-probs): at a
// real vocabulary's size, against a long-double reference; masked (-inf) tokens add nothing; large logits do not
// overflow.
TEST(Logprobs, LogSumExpOfAVocabularyRowMatchesALongDoubleReference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (const float offset : {0.0f, 1000.0f, -1000.0f}) {
    std::vector<float> row(151936);
    for (float& v : row) v = normal(rng) + offset;
    for (size_t t = 0; t < row.size(); t += 97) row[t] = -std::numeric_limits<float>::infinity();
    long double max_value = row[1];
    for (float v : row) max_value = std::max<long double>(max_value, v);
    long double sum = 0.0L;
    for (float v : row) sum += std::exp(static_cast<long double>(v) - max_value);
    const double expected = static_cast<double>(max_value + std::log(sum));
    EXPECT_NEAR(LogSumExp(row), expected, 1e-6 * std::max(1.0, std::abs(expected))) << "offset " << offset;
    EXPECT_NEAR(LogSoftmaxAt(row, 5), static_cast<double>(row[5]) - expected, 1e-6 * std::max(1.0, std::abs(expected)));
    EXPECT_EQ(RawLogprobs(row, 5, 0).logprob, static_cast<float>(row[5] - LogSumExp(row)));
  }
}

// ArgMax (greedy decoding, prompt_logprobs' greedy flags) keeps sixteen running maxima: the answer is the first
// largest value wherever it lies, in a full lane group or in the tail, with a tie after it.
TEST(Logprobs, ArgMaxIsTheFirstLargestValueWhereverItLies) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-5.0f, 5.0f);
  for (const size_t size : {size_t{1}, size_t{17}, size_t{1007}, size_t{151936}}) {
    std::vector<float> row(size);
    for (float& v : row) v = uniform(rng);
    for (const size_t at : {size_t{0}, size_t{5}, size_t{16}, size / 2, size - 1}) {
      if (at >= size) continue;
      std::vector<float> peaked = row;
      peaked[at] = 9.0f;
      if (at + 3 < size) peaked[at + 3] = 9.0f;  // a tie after it
      EXPECT_EQ(ArgMax(peaked), static_cast<int32_t>(at)) << "size " << size;
      EXPECT_EQ(ArgMax(peaked), std::max_element(peaked.begin(), peaked.end()) - peaked.begin());
    }
  }
  EXPECT_EQ(ArgMax(std::vector<float>{-std::numeric_limits<float>::infinity(), -1.0f}), 1);
}

// top_logprobs (sampled tokens' and the prompt's): the n most likely tokens, most likely first, ties broken by the
// lower id, as a full sort of the vocabulary orders them.
TEST(Logprobs, TopAlternativesAreTheFullSortsFirstN) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> coarse(-400, 400);  // a coarse grid: many ties
  std::vector<float> row(151936);
  for (float& v : row) v = static_cast<float>(coarse(rng)) / 40.0f;
  std::vector<int32_t> order(row.size());
  for (size_t t = 0; t < order.size(); ++t) order[t] = static_cast<int32_t>(t);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  for (const int n : {1, 5, 20}) {
    const SampledToken got = RawLogprobs(row, 7, n);
    ASSERT_EQ(got.top.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(got.top[i].token, order[i]) << "n " << n << " place " << i;
      EXPECT_FLOAT_EQ(got.top[i].logprob, static_cast<float>(row[order[i]] - LogSumExp(row)));
    }
  }
  EXPECT_EQ(RawLogprobs(std::vector<float>{1.0f, 2.0f}, 0, 5).top.size(), 2u) << "n beyond the vocabulary";
}

// ScoreRow reads a row block by block (the argmax, the exp-sum, the target's rank and the kept alternatives at
// once, passing over blocks that cannot change them): it equals the one-thing-at-a-time definitions on rows of
// many sizes (blocks and lane groups cut short), with ties, the maximum at a block's edges, and masked tokens that
// only fill the alternatives once the finite ones run out (in id order).
TEST(Logprobs, ScoreRowEqualsTheDefinitionsOfEachScore) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> coarse(-300, 300);  // a coarse grid: many ties
  const float masked = -std::numeric_limits<float>::infinity();
  int cases = 0;
  for (const size_t size : {size_t{1}, size_t{3}, size_t{17}, size_t{1024}, size_t{1025}, size_t{5000}, size_t{151936}}) {
    for (const int shape : {0, 1, 2, 3}) {
      std::vector<float> row(size);
      for (float& v : row) v = static_cast<float>(coarse(rng)) / 30.0f;
      if (shape == 1) row[std::min(size - 1, size_t{1023})] = 20.0f;  // the maximum at a block's last token
      if (shape == 2) row[size - 1] = 20.0f;                           // at the row's last token
      if (shape == 3) {                                                // three finite tokens, late in the row
        std::fill(row.begin(), row.end(), masked);
        for (size_t t = size > 3 ? size - 3 : 0; t < size; ++t) row[t] = static_cast<float>(t % 5);
      }
      std::vector<int32_t> order(size);
      for (size_t t = 0; t < size; ++t) order[t] = static_cast<int32_t>(t);
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      const double log_z = LogSumExp(row);
      for (const int32_t target : {int32_t{-1}, int32_t{0}, static_cast<int32_t>(size / 2), static_cast<int32_t>(size - 1)}) {
        for (const size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{20}}) {
          SCOPED_TRACE(::testing::Message() << "size " << size << " shape " << shape << " target " << target << " n " << n);
          std::vector<TokenLogprob> top(n, TokenLogprob{-7, 1.0f});
          const RowScore score = ScoreRow(row, target, top);
          EXPECT_EQ(score.argmax, ArgMax(row));
          if (target >= 0) {
            EXPECT_EQ(score.logprob, static_cast<float>(row[target] - log_z));
            EXPECT_EQ(score.rank, RankOf(row, target));
          } else {
            EXPECT_EQ(score.rank, 0);
          }
          for (size_t i = 0; i < n; ++i) {
            if (i >= size) {
              EXPECT_EQ(top[i].token, -7) << "beyond the vocabulary: left as it was";
              continue;
            }
            EXPECT_EQ(top[i].token, order[i]) << i;
            EXPECT_EQ(top[i].logprob, static_cast<float>(row[order[i]] - log_z)) << i;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 7 * 4 * 4 * 4);
}

}  // namespace
}  // namespace arach
