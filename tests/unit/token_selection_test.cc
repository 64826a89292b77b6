// TokenSelection (the sampler's top-k, top-p, min-p and draw) and MostLikelyTokens against their definitions
// written the slow way: the whole vocabulary ordered most likely first (probability, then the lower id).
#include "engine/sampling/token_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/sampling/most_likely_tokens.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

std::vector<int32_t> MostLikelyFirst(const std::vector<float>& probs) {
  std::vector<int32_t> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); });
  return order;
}

// The rules as the sampler documents them, on a full order.
std::vector<int32_t> ReferenceKeep(const std::vector<float>& probs, int top_k, float top_p, float min_p) {
  std::vector<int32_t> order = MostLikelyFirst(probs);
  if (top_k > 0 && static_cast<size_t>(top_k) < order.size()) order.resize(static_cast<size_t>(top_k));
  if (top_p < 1.0f) {
    double total = 0.0;
    for (int32_t t : order) total += probs[t];
    double cumulative = 0.0;
    size_t cut = 0;
    while (cut < order.size()) {
      cumulative += probs[order[cut++]];
      if (cumulative >= static_cast<double>(top_p) * total) break;
    }
    order.resize(cut);
  }
  if (min_p > 0.0f) {
    const float floor = min_p * probs[order[0]];
    order.erase(std::remove_if(order.begin(), order.end(), [&](int32_t t) { return !(probs[t] >= floor); }), order.end());
  }
  std::sort(order.begin(), order.end());
  return order;
}

// Rows of probabilities of several shapes: peaked (a softmax of normal logits), flat (most of them within a factor
// of two: top-p's cut falls among tens of thousands of tokens with the same exponent), on a coarse grid (ties), and
// with masked (zero) tokens.
std::vector<float> Row(size_t size, int shape, std::mt19937& rng) {
  std::vector<float> probs(size);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<float> uniform(0.5f, 1.0f);
  std::uniform_int_distribution<int> grid(1, 8);
  for (float& p : probs) {
    if (shape == 0) p = std::exp(normal(rng) - 15.0f);
    if (shape == 1) p = uniform(rng);
    if (shape == 2) p = static_cast<float>(grid(rng)) / 8.0f;
    if (shape == 3) p = grid(rng) <= 3 ? 0.0f : uniform(rng);
  }
  probs[size / 3] = 1.0f;
  return probs;
}

TEST(TokenSelection, KeepsWhatTheRulesKeepOnAFullOrder) {
  std::mt19937 rng(29);
  TokenSelection selection;
  int checked = 0;
  for (const size_t size : {size_t{5}, size_t{300}, size_t{3000}, size_t{151936}}) {
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<float> probs = Row(size, shape, rng);
      for (const int top_k : {0, 1, 50, 1500}) {
        for (const float top_p : {1.0f, 0.9137f, 0.4261f, 0.0001f}) {
          for (const float min_p : {0.0f, 0.0513f}) {
            if (size == 151936 && (top_k == 1 || min_p > 0.0f)) continue;  // (the large rows: the other paths)
            SCOPED_TRACE(::testing::Message() << "size " << size << " shape " << shape << " top_k " << top_k << " top_p "
                                              << top_p << " min_p " << min_p);
            const std::span<const int32_t> kept = selection.Keep(probs, top_k, top_p, min_p);
            const std::vector<int32_t> expected = ReferenceKeep(probs, top_k, top_p, min_p);
            ASSERT_EQ(std::vector<int32_t>(kept.begin(), kept.end()), expected);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 4 * 4 * 4 * 2 + 4 * 3 * 4);
}

// Where the mass reaches top_p exactly (powers of two: every sum exact in any order), top-p stops there, and a
// token exactly at min_p times the most likely one stays: on a few tokens (ordered whole) and on thousands (cut
// found by the probabilities' bits).
TEST(TokenSelection, BoundariesReachedExactlyAreKept) {
  TokenSelection selection;
  const std::vector<float> few = {0.125f, 0.5f, 0.125f, 0.25f};
  std::span<const int32_t> kept = selection.Keep(few, 0, 0.75f, 0.0f);
  EXPECT_EQ(std::vector<int32_t>(kept.begin(), kept.end()), (std::vector<int32_t>{1, 3})) << "0.5 + 0.25 reach 0.75";
  kept = selection.Keep(few, 0, 1.0f, 0.5f);
  EXPECT_EQ(std::vector<int32_t>(kept.begin(), kept.end()), (std::vector<int32_t>{1, 3})) << "0.25 is 0.5 of 0.5";

  std::vector<float> many(4096, 0.0f);  // 0.5, then 1024 tokens of 2^-12 (0.25), then 2048 of 2^-13 (0.25)
  many[7] = 0.5f;
  for (size_t t = 1000; t < 2024; ++t) many[t] = 1.0f / 4096.0f;
  for (size_t t = 2024; t < 4072; ++t) many[t] = 1.0f / 8192.0f;
  kept = selection.Keep(many, 0, 0.75f, 0.0f);
  ASSERT_EQ(kept.size(), 1025u) << "the 0.5 and the 2^-12 tokens reach 0.75";
  EXPECT_EQ(kept.front(), 7);
  EXPECT_EQ(kept.back(), 2023);
  kept = selection.Keep(many, 0, 1.0f, 1.0f / 2048.0f);
  EXPECT_EQ(kept.size(), 1025u) << "2^-12 is 2^-11 of 0.5";

  for (const size_t size : {size_t{100}, size_t{4096}}) {  // every token masked: the first alone, as a full order finds
    const std::vector<float> zeros(size, 0.0f);
    kept = selection.Keep(zeros, 0, 0.9f, 0.0f);
    EXPECT_EQ(std::vector<int32_t>(kept.begin(), kept.end()), (std::vector<int32_t>{0})) << size;
    EXPECT_EQ(selection.Draw(zeros, kept, 0.5), 0) << size;
  }
}

// The draw walks the kept tokens in the order given: the first whose running sum exceeds u times their sum, as
// the one-token-at-a-time walk finds it, wherever it lies among the blocks summed at once.
TEST(TokenSelection, DrawIsTheInverseCdfInTheGivenOrder) {
  std::mt19937 rng(31);
  TokenSelection selection;
  for (const size_t size : {size_t{1}, size_t{7}, size_t{1024}, size_t{1025}, size_t{5000}}) {
    std::vector<float> probs = Row(size, 3, rng);
    std::vector<int32_t> kept(size);
    std::iota(kept.begin(), kept.end(), 0);
    double total = 0.0;
    for (float p : probs) total += p;
    for (const double u : {0.0, 0.2, 0.5, 0.7311, 0.999999}) {
      double cumulative = 0.0;
      int32_t expected = kept.back();
      for (int32_t t : kept) {
        cumulative += probs[t];
        if (cumulative > u * total) {
          expected = t;
          break;
        }
      }
      EXPECT_EQ(selection.Draw(probs, kept, u), expected) << "size " << size << " u " << u;
    }
    if (size > 1) {
      EXPECT_GT(probs[static_cast<size_t>(selection.Draw(probs, kept, 0.0))], 0.0f) << "a masked token is never drawn";
    }
  }
}

// MostLikelyTokens, offered a whole row in id order (groups passed over) or token by token in any order, keeps
// the full order's first n, the masked ones too when they are needed to fill it.
TEST(MostLikelyTokens, KeepTheFullOrdersFirstN) {
  std::mt19937 rng(37);
  for (const size_t size : {size_t{3}, size_t{40}, size_t{1000}, size_t{20000}}) {
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<float> probs = Row(size, shape, rng);
      const std::vector<int32_t> order = MostLikelyFirst(probs);
      std::vector<int32_t> shuffled(order);
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      for (const size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{1024}}) {
        SCOPED_TRACE(::testing::Message() << "size " << size << " shape " << shape << " n " << n);
        const std::vector<int32_t> expected(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(n, size)));
        std::vector<int32_t> kept;
        MostLikelyTokens by_range(probs, n, kept);
        by_range.OfferRange(0, size / 2);
        by_range.OfferRange(size / 2, size);
        const std::span<const int32_t> sorted = by_range.Sorted();
        EXPECT_EQ(std::vector<int32_t>(sorted.begin(), sorted.end()), expected);
        MostLikelyTokens one_by_one(probs, n, kept);
        for (int32_t t : shuffled) one_by_one.Offer(t);
        const std::span<const int32_t> sorted_too = one_by_one.Sorted();
        EXPECT_EQ(std::vector<int32_t>(sorted_too.begin(), sorted_too.end()), expected);
      }
    }
  }
}

}  // namespace
}  // namespace arach
