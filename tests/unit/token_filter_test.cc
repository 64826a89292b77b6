// vLLM's allowed_token_ids and bad_words as the next-token mask (engine/sampling/token_filter.h), on token ids:
// the allowed set, a bad word's last token masked only after its other tokens, the structured output's mask
// kept, and the cases that leave nothing to sample refused. (The tokenization of bad words is checked on the
// real tokenizers in tests/conformance/tokenizer_refs_test.cc.)
#include "engine/sampling/token_filter.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

constexpr int kVocab = 70;  // three mask words, the last one partly past the vocabulary

std::set<int32_t> Tokens(std::span<const uint32_t> mask) {
  std::set<int32_t> tokens;
  for (size_t w = 0; w < mask.size(); ++w) {
    for (int b = 0; b < 32; ++b) {
      if ((mask[w] >> b) & 1u) tokens.insert(static_cast<int32_t>(w * 32 + b));
    }
  }
  return tokens;
}

std::set<int32_t> AllBut(std::set<int32_t> removed) {
  std::set<int32_t> tokens;
  for (int32_t t = 0; t < kVocab; ++t) {
    if (removed.count(t) == 0) tokens.insert(t);
  }
  return tokens;
}

TEST(TokenFilter, NothingAskedFiltersNothing) {
  absl::StatusOr<TokenFilter> filter = TokenFilter::Create(SamplingParams{}, {}, kVocab);
  ASSERT_TRUE(filter.ok()) << filter.status();
  EXPECT_FALSE(filter->active());
}

TEST(TokenFilter, OnlyTheAllowedIdsAreLeft) {
  SamplingParams params;
  params.allowed_token_ids = {3, 40, 69, 40};
  absl::StatusOr<TokenFilter> filter = TokenFilter::Create(params, {}, kVocab);
  ASSERT_TRUE(filter.ok()) << filter.status();
  ASSERT_TRUE(filter->active());
  absl::StatusOr<std::span<const uint32_t>> allowed = filter->Allowed({}, {});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->size(), 3u);
  EXPECT_EQ(Tokens(*allowed), (std::set<int32_t>{3, 40, 69}));

  params.allowed_token_ids = {3, 70};
  absl::StatusOr<TokenFilter> outside = TokenFilter::Create(params, {}, kVocab);
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(outside.status().message()), HasSubstr("allowed_token_ids[1]: token id 70 is outside the vocabulary"));
}

TEST(TokenFilter, ABadWordsLastTokenIsMaskedOnlyAfterItsOtherTokens) {
  absl::StatusOr<TokenFilter> filter = TokenFilter::Create(SamplingParams{}, {{7}, {5, 6}, {1, 2, 3}}, kVocab);
  ASSERT_TRUE(filter.ok()) << filter.status();
  auto allowed_after = [&](std::vector<int32_t> generated) {
    absl::StatusOr<std::span<const uint32_t>> allowed = filter->Allowed({}, generated);
    EXPECT_TRUE(allowed.ok()) << allowed.status();
    return allowed.ok() ? Tokens(*allowed) : std::set<int32_t>{};
  };
  EXPECT_EQ(allowed_after({}), AllBut({7})) << "a one-token word always";
  EXPECT_EQ(allowed_after({9, 5}), AllBut({7, 6}));
  EXPECT_EQ(allowed_after({5, 9}), AllBut({7})) << "only right after its prefix";
  EXPECT_EQ(allowed_after({1, 2}), AllBut({7, 3}));
  EXPECT_EQ(allowed_after({2}), AllBut({7})) << "the whole prefix";
  EXPECT_EQ(allowed_after({4, 1, 2}), AllBut({7, 3}));
}

TEST(TokenFilter, TheStructuredOutputsMaskIsKept) {
  SamplingParams params;
  params.allowed_token_ids = {3, 4, 40};
  absl::StatusOr<TokenFilter> filter = TokenFilter::Create(params, {{4}}, kVocab);
  ASSERT_TRUE(filter.ok()) << filter.status();
  const std::vector<uint32_t> constraint = {(1u << 3) | (1u << 4) | (1u << 5), 0u};  // 3, 4, 5 (the third word missing)
  absl::StatusOr<std::span<const uint32_t>> allowed = filter->Allowed(constraint, {});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(Tokens(*allowed), (std::set<int32_t>{3}));

  const std::vector<uint32_t> elsewhere = {1u << 5};
  absl::StatusOr<std::span<const uint32_t>> none = filter->Allowed(elsewhere, {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("leave no token the structured output allows"));
}

TEST(TokenFilter, BadWordsThatBanEveryAllowedTokenAreRefused) {
  SamplingParams params;
  params.allowed_token_ids = {3, 4};
  absl::StatusOr<TokenFilter> refused = TokenFilter::Create(params, {{3}, {4}}, kVocab);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("bad_words: ban every token of allowed_token_ids"));

  absl::StatusOr<TokenFilter> late = TokenFilter::Create(params, {{3}, {9, 4}}, kVocab);  // 4 goes only after 9
  ASSERT_TRUE(late.ok()) << late.status();
  const std::vector<int32_t> after_nine = {9}, after_four = {4};
  EXPECT_EQ(late->Allowed({}, after_nine).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(late->Allowed({}, after_four).ok());
}

}  // namespace
}  // namespace arach
