#include "engine/spec/draft_proposer.h"

#include <algorithm>

namespace arach {

DraftProposal ProposeByLookup(std::span<const int32_t> recent, std::span<const int32_t> source, int cursor, int max_tokens,
                              NgramSizes sizes) {
  DraftProposal proposal;
  if (max_tokens <= 0 || source.empty()) return proposal;
  const int longest = std::min<int>(sizes.max_n, static_cast<int>(recent.size()));
  const int source_size = static_cast<int>(source.size());
  for (int n = longest; n >= std::max(1, sizes.min_n); --n) {
    const std::span<const int32_t> pattern = recent.last(static_cast<size_t>(n));
    int chosen_end = -1;  // source index just after the chosen occurrence
    // Occurrences end at `end` in [n, source_size - 1]: at least one token follows.
    for (int end = n; end < source_size; ++end) {
      if (source[end - 1] != pattern.back() || !std::equal(pattern.begin(), pattern.end(), source.begin() + (end - n))) continue;
      chosen_end = end;
      if (end >= cursor) break;  // the first at or after the cursor; before it, the last one seen so far
    }
    if (chosen_end < 0) continue;
    const int count = std::min(max_tokens, source_size - chosen_end);
    proposal.tokens.assign(source.begin() + chosen_end, source.begin() + chosen_end + count);
    proposal.source_position = chosen_end;
    return proposal;
  }
  return proposal;
}

}  // namespace arach
