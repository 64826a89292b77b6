// Draft tokens for speculative decoding by n-gram lookup: the longest recent n-gram of the output found in a
// source text proposes the tokens that follow it there. The source is the request's prediction (OpenAI's
// predicted outputs: a document the answer mostly repeats) or the sequence itself (prompt lookup: answers that
// quote their prompt). Drafts only save steps: the engine samples every emitted token as it would without them
// and keeps a draft only where it equals the sampled token, so the output is the same with or without them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace arach {

// The n-gram sizes tried, longest first.
struct NgramSizes {
  int min_n = 1;
  int max_n = 4;
};

struct DraftProposal {
  std::vector<int32_t> tokens;  // at most the asked count; empty: nothing found
  int source_position = 0;      // index in the source of tokens[0]
};

// Finds the longest suffix of `recent` (min_n..max_n tokens, at most recent.size()) that occurs in `source` with at
// least one token after it; among its occurrences, the first that ends at or after `cursor` (where the previous
// accepted draft left off: text is usually repeated in order), else the last one. Proposes up to `max_tokens` of the
// tokens that follow it. `recent` may be a view of `source`'s own tail (prompt lookup): the tail itself is no match,
// as nothing follows it.
//
// This is the rule's plain statement, a scan of the whole source per call; the engine serves it through NgramIndex
// (ngram_index.h), which gives the same proposals at a cost that follows how often the recent tokens occur rather
// than the source's length (tests hold them equal; bench/draft_lookup_bench times both).
DraftProposal ProposeByLookup(std::span<const int32_t> recent, std::span<const int32_t> source, int cursor, int max_tokens,
                              NgramSizes sizes);

}  // namespace arach
