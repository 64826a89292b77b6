// The n most likely tokens of a row (top_logprobs' alternatives, top-k, top-p's preselection) in one pass, without
// ordering the vocabulary: a heap of the best so far whose front is the least likely of them, so that most tokens
// lose one comparison; a row offered in id order passes over groups of 16 tokens in vector compares.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace arach {

// The order "most likely first" over token ids: a larger value (logit or probability), then the lower id.
struct MoreLikely {
  std::span<const float> values;
  bool operator()(int32_t a, int32_t b) const { return values[a] > values[b] || (values[a] == values[b] && a < b); }
};

class MostLikelyTokens {
 public:
  // Keeps the `capacity` most likely tokens offered, `values[id]` being a token's logit or probability ("more
  // likely": a larger value, then the lower id). `kept` holds them (cleared here).
  MostLikelyTokens(std::span<const float> values, size_t capacity, std::vector<int32_t>& kept);

  void Offer(int32_t id);
  // Offers tokens [begin, end). Every token offered before has an id below `begin` (then a later token that only
  // equals the least likely kept one is less likely, and groups of them are passed over at once).
  void OfferRange(size_t begin, size_t end);

  // Whether a token must beat threshold() to be kept (there are `capacity` already).
  bool full() const { return kept_.size() >= capacity_; }
  // The least likely kept token's value once full (+inf when the capacity is 0: nothing is kept); -inf before.
  float threshold() const;

  // The kept tokens, most likely first. Ends the offers.
  std::span<const int32_t> Sorted();

 private:
  std::span<const float> values_;
  size_t capacity_;
  std::vector<int32_t>& kept_;
};

}  // namespace arach
