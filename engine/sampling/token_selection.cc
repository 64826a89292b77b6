#include "engine/sampling/token_selection.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <numeric>
#include <optional>

#include "engine/sampling/most_likely_tokens.h"

namespace arach {
namespace {

// Candidates preselected for top-p (the full order of a 151k vocabulary is ~10 ms): when the most likely this many
// hold top_p of the mass, only they are sorted. Also the largest top_k selected with a heap (nth_element beyond).
constexpr size_t kPreselect = 1024;
// Top-p orders at most this many tokens: the kept ones where they are few, else those of the probability range the
// cut falls in (FindTopPCut).
constexpr size_t kSortedTopP = 2048;
// Kept tokens summed at once by the draw (vector gathers) before it walks one block token by token.
constexpr size_t kDrawBlock = 1024;

// sum(probs[ids[i]]) in double (vectorised: gathers and independent partial sums).
double SumOf(std::span<const float> probs, std::span<const int32_t> ids) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (size_t i = 0; i < ids.size(); ++i) sum += static_cast<double>(probs[static_cast<size_t>(ids[i])]);
  return sum;
}

// Where a list of tokens ordered most likely first is cut to reach `target` after `before` (the mass of the tokens
// before the list): the count of tokens kept (at least one, all where rounding leaves the target out of reach).
size_t CutSorted(std::span<const float> probs, std::span<const int32_t> ranked, double before, double target) {
  double cumulative = before;
  size_t cut = 0;
  while (cut < ranked.size()) {
    cumulative += static_cast<double>(probs[static_cast<size_t>(ranked[cut++])]);
    if (cumulative >= target) break;
  }
  return cut;
}

uint32_t BitsOf(float probability) { return std::bit_cast<uint32_t>(probability); }

}  // namespace

TokenSelection::LastKept TokenSelection::FindTopPCut(std::span<const float> probs, std::span<const int32_t> kept, double target) {
  // A probability's bits order like the probability (both are >= 0): the tokens are bucketed by 11, 11, then 10 of
  // their bits, from the top; the bucket where the mass from above reaches the target holds the cut. Its tokens are
  // bucketed by their next bits, until few enough are left to order them.
  struct Level {
    int shift;
    uint32_t mask;
  };
  constexpr Level kLevels[] = {{21, 0x7FF}, {10, 0x7FF}, {0, 0x3FF}};
  const MoreLikely more_likely{probs};
  if (!(target > 0.0)) {  // (every probability 0: the most likely token alone reaches it, as CutSorted finds)
    const int32_t first = *std::min_element(kept.begin(), kept.end(), more_likely);
    return {BitsOf(probs[static_cast<size_t>(first)]), first};
  }
  double above = 0.0;  // the mass of the tokens known to come before the cut
  std::span<const int32_t> pool = kept;
  for (size_t level = 0; level < std::size(kLevels); ++level) {
    const Level l = kLevels[level];
    bucket_mass_.assign(l.mask + 1, 0.0);
    for (const int32_t t : pool) {
      const float p = probs[static_cast<size_t>(t)];
      bucket_mass_[(BitsOf(p) >> l.shift) & l.mask] += static_cast<double>(p);
    }
    std::optional<uint32_t> cut_bucket;
    for (uint32_t b = l.mask + 1; b-- > 0;) {
      if (above + bucket_mass_[b] >= target) {
        cut_bucket = b;
        break;
      }
      above += bucket_mass_[b];
    }
    if (!cut_bucket) {  // rounding left the target out of reach: the pool is kept whole, to its least likely token
      const int32_t last = *std::max_element(pool.begin(), pool.end(), more_likely);
      return {BitsOf(probs[static_cast<size_t>(last)]), last};
    }
    pool_.clear();
    for (const int32_t t : pool) {
      if (((BitsOf(probs[static_cast<size_t>(t)]) >> l.shift) & l.mask) == *cut_bucket) pool_.push_back(t);
    }
    pool_.swap(next_pool_);
    pool = next_pool_;
    if (pool.size() <= kSortedTopP || level + 1 == std::size(kLevels)) break;
  }
  // The cut's bucket in order, cut where the mass from above reaches the target.
  std::sort(next_pool_.begin(), next_pool_.end(), more_likely);
  const size_t cut = CutSorted(probs, next_pool_, above, target);
  const int32_t last = next_pool_[cut - 1];
  return {BitsOf(probs[static_cast<size_t>(last)]), last};
}

std::span<const int32_t> TokenSelection::Keep(std::span<const float> probs, int top_k, float top_p, float min_p) {
  const MoreLikely more_likely{probs};
  ids_.resize(probs.size());
  std::iota(ids_.begin(), ids_.end(), 0);
  size_t keep = ids_.size();
  bool in_id_order = true;
  if (top_k > 0 && static_cast<size_t>(top_k) < keep) {  // the top_k most likely first, in any order
    const size_t k = static_cast<size_t>(top_k);
    if (k <= kPreselect) {
      MostLikelyTokens(probs, k, head_).OfferRange(0, probs.size());
      std::copy(head_.begin(), head_.end(), ids_.begin());
    } else {
      std::nth_element(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(k), ids_.end(), more_likely);
    }
    keep = k;
    in_id_order = false;
  }
  if (top_p < 1.0f) {  // the fewest most likely whose mass reaches top_p of the kept mass
    const std::span<int32_t> kept(ids_.data(), keep);
    const double target = static_cast<double>(top_p) * SumOf(probs, kept);
    if (keep <= kSortedTopP) {
      std::sort(kept.begin(), kept.end(), more_likely);
      keep = CutSorted(probs, kept, 0.0, target);
      in_id_order = false;
    } else {  // the last kept token found by its probability's bits; the kept tokens stay in their order
      const LastKept last = FindTopPCut(probs, kept, target);
      keep = static_cast<size_t>(std::remove_if(kept.begin(), kept.end(), [&](int32_t t) { return !last.Keeps(t, probs[static_cast<size_t>(t)]); }) -
                                 kept.begin());
    }
  }
  if (min_p > 0.0f) {  // those at least min_p times the most likely kept one (the order of the rest kept)
    float top = 0.0f;
    for (size_t i = 0; i < keep; ++i) top = std::max(top, probs[static_cast<size_t>(ids_[i])]);
    const float floor = min_p * top;
    keep = static_cast<size_t>(std::remove_if(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(keep),
                                              [&](int32_t t) { return !(probs[static_cast<size_t>(t)] >= floor); }) -
                               ids_.begin());
  }
  if (!in_id_order) std::sort(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(keep));
  return {ids_.data(), keep};
}

int32_t TokenSelection::Draw(std::span<const float> probs, std::span<const int32_t> kept, double u) {
  if (kept.empty()) return 0;  // (no token kept: only where every probability is NaN)
  block_sums_.clear();
  double total = 0.0;
  for (size_t begin = 0; begin < kept.size(); begin += kDrawBlock) {
    block_sums_.push_back(SumOf(probs, kept.subspan(begin, std::min(kDrawBlock, kept.size() - begin))));
    total += block_sums_.back();
  }
  const double target = u * total;
  double cumulative = 0.0;
  for (size_t b = 0; b < block_sums_.size(); ++b) {
    const size_t begin = b * kDrawBlock;
    if (!(cumulative + block_sums_[b] > target)) {  // the target lies beyond this block
      cumulative += block_sums_[b];
      continue;
    }
    for (size_t i = begin; i < std::min(kept.size(), begin + kDrawBlock); ++i) {
      cumulative += static_cast<double>(probs[static_cast<size_t>(kept[i])]);
      if (cumulative > target) return kept[i];
    }
  }
  return kept.back();
}

}  // namespace arach
