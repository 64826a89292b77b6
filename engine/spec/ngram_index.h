// An index of a token source for draft lookup (ProposeByLookup's rule, draft_proposer.h) whose cost follows the
// occurrences of the recent n-gram's last tokens instead of the source's length: prompt lookup searches the whole
// sequence every step, which at a 100k-token context is a scan of 100k positions per n-gram size per sequence per
// step. The index chains every position of the source by the `min_n` (at most 2) tokens that end there, in source
// order; it grows with the source (a sequence's verified tokens) at a cost per appended token.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/spec/draft_proposer.h"

namespace arach {

class NgramIndex {
 public:
  static constexpr int kMaxNgram = 8;  // the longest n-gram looked up (a larger max_n is cut to it)

  explicit NgramIndex(NgramSizes sizes);

  // Indexes `source`'s tokens past those indexed before (`source` extends what earlier calls saw; one that does not,
  // shorter or with other tokens, is indexed again from the start: only the length and the last token are checked).
  void Extend(std::span<const int32_t> source);

  // ProposeByLookup(recent, source, cursor, max_tokens, sizes) on the indexed `source` (Extend first): the same
  // proposal.
  DraftProposal Propose(std::span<const int32_t> recent, std::span<const int32_t> source, int cursor, int max_tokens) const;

  size_t indexed() const { return indexed_; }

 private:
  struct Chain {
    int32_t first = -1;  // the first end position with this key
    int32_t last = -1;   // the last, where the next one is linked
  };
  uint64_t KeyEndingAt(std::span<const int32_t> tokens, size_t end) const;

  NgramSizes sizes_;
  int key_length_;  // tokens in a key: min_n, at most 2
  absl::flat_hash_map<uint64_t, Chain> chains_;
  std::vector<int32_t> next_;  // [indexed_ + 1]: by end position, the next end with the same key (-1: none)
  size_t indexed_ = 0;         // source tokens indexed
  int32_t last_token_ = -1;    // the last indexed token (Extend's check that the source still extends it)
};

}  // namespace arach
