// Which tokens a sampled draw may pick, and the draw, over a row of unnormalised probabilities (each token's
// weight; 0 for a masked one): top-k, then top-p, then min-p, then the inverse CDF of a uniform number over the
// kept tokens in id order, so that the token drawn depends only on (probabilities, rules, number). The second half
// of Sampler::Sample, apart so that its selection can be checked against full sorts.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace arach {

class TokenSelection {
 public:
  // The ids of the tokens kept, in increasing order (valid until the next call): the `top_k` most likely (0: all),
  // of them the fewest most likely whose probabilities reach `top_p` of theirs (1: all), of them those at least
  // `min_p` times the most likely one's (0: all). "Most likely" orders by probability, then the lower id.
  std::span<const int32_t> Keep(std::span<const float> probs, int top_k, float top_p, float min_p);

  // The first kept token (in the order given) at which the running sum of probabilities exceeds u * their sum
  // (u in [0, 1)); the last one where rounding leaves none. Sums in double, a block of kept tokens at a time.
  int32_t Draw(std::span<const float> probs, std::span<const int32_t> kept, double u);

 private:
  // Top-p's last kept token in the order most likely first: a token is kept when it comes no later.
  struct LastKept {
    uint32_t bits;  // its probability's bits
    int32_t id;
    bool Keeps(int32_t token, float probability) const {
      const uint32_t b = std::bit_cast<uint32_t>(probability);
      return b > bits || (b == bits && token <= id);
    }
  };
  // The last token top-p keeps of `kept` (any order, more than kSortedTopP of them): the first, most likely first,
  // at which the running mass reaches `target`, ordering only the tokens whose probabilities lie in its range.
  LastKept FindTopPCut(std::span<const float> probs, std::span<const int32_t> kept, double target);

  std::vector<int32_t> ids_;        // [vocab] candidates, the kept ones first
  std::vector<int32_t> head_;       // the most likely candidates, preselected
  std::vector<double> block_sums_;  // [kept / block] the draw's partial sums
  std::vector<double> bucket_mass_;  // [2048] FindTopPCut's probability mass per bucket of bits
  std::vector<int32_t> pool_, next_pool_;  // FindTopPCut's tokens in the cut's bucket
};

}  // namespace arach
