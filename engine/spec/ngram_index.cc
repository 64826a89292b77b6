#include "engine/spec/ngram_index.h"

#include <algorithm>
#include <array>

namespace arach {

NgramIndex::NgramIndex(NgramSizes sizes) : sizes_(sizes), key_length_(std::clamp(sizes.min_n, 1, 2)) {
  sizes_.max_n = std::min(sizes_.max_n, kMaxNgram);
}

uint64_t NgramIndex::KeyEndingAt(std::span<const int32_t> tokens, size_t end) const {
  uint64_t key = static_cast<uint32_t>(tokens[end - 1]);
  if (key_length_ == 2) key |= static_cast<uint64_t>(static_cast<uint32_t>(tokens[end - 2])) << 32;
  return key;
}

void NgramIndex::Extend(std::span<const int32_t> source) {
  if (source.size() < indexed_ || (indexed_ > 0 && source[indexed_ - 1] != last_token_)) {
    chains_.clear();
    next_.clear();
    indexed_ = 0;
  }
  next_.resize(source.size() + 1, -1);
  for (size_t end = std::max<size_t>(indexed_ + 1, static_cast<size_t>(key_length_)); end <= source.size(); ++end) {
    Chain& chain = chains_[KeyEndingAt(source, end)];
    if (chain.last >= 0) {
      next_[static_cast<size_t>(chain.last)] = static_cast<int32_t>(end);
    } else {
      chain.first = static_cast<int32_t>(end);
    }
    chain.last = static_cast<int32_t>(end);
  }
  indexed_ = source.size();
  if (indexed_ > 0) last_token_ = source.back();
}

DraftProposal NgramIndex::Propose(std::span<const int32_t> recent, std::span<const int32_t> source, int cursor, int max_tokens) const {
  DraftProposal proposal;
  const int longest = std::min<int>(sizes_.max_n, static_cast<int>(recent.size()));
  const int shortest = std::max(1, sizes_.min_n);
  if (max_tokens <= 0 || source.empty() || longest < shortest || longest < key_length_) return proposal;
  const auto found = chains_.find(KeyEndingAt(recent, recent.size()));
  if (found == chains_.end()) return proposal;
  const int source_size = static_cast<int>(std::min(source.size(), indexed_));
  // Per n-gram size, as ProposeByLookup's scan chooses: the first occurrence ending at or after the cursor (then
  // `settled`), else the last one before it.
  std::array<int, kMaxNgram + 1> chosen_end;  // by n
  chosen_end.fill(-1);
  std::array<bool, kMaxNgram + 1> settled{};
  for (int32_t end = found->second.first; end >= 0 && end < source_size; end = next_[static_cast<size_t>(end)]) {
    int matched = key_length_;  // the key's tokens match by construction
    while (matched < longest && matched < end && source[end - 1 - matched] == recent[recent.size() - 1 - matched]) ++matched;
    for (int n = shortest; n <= matched; ++n) {
      if (settled[n]) continue;
      chosen_end[n] = end;
      settled[n] = end >= cursor;
    }
    if (settled[longest]) break;  // nothing later can do better
  }
  for (int n = longest; n >= shortest; --n) {
    if (chosen_end[n] < 0) continue;
    const int count = std::min(max_tokens, source_size - chosen_end[n]);
    proposal.tokens.assign(source.begin() + chosen_end[n], source.begin() + chosen_end[n] + count);
    proposal.source_position = chosen_end[n];
    return proposal;
  }
  return proposal;
}

}  // namespace arach
