// tokenizer.json pre-tokenizers: split the normalized text into the pieces the model encodes one by one.
// ByteLevel (with or without the GPT-2 regex, add_prefix_space), Split (string or regex pattern, every
// behavior, invert), Metaspace (replacement, prepend_scheme, split), Digits, Punctuation, Whitespace,
// WhitespaceSplit and Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach {

// One piece of text on its way to the model.
struct TextPiece {
  std::string text;
  bool at_start = false;  // begins at the start of the whole input (Metaspace's prepend_scheme "first")
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece by its sub-pieces (empty pieces are dropped).
  virtual absl::Status PreTokenize(std::vector<TextPiece>& pieces) const = 0;
};

// What happens to the matches of a split pattern (tokenizers' SplitDelimiterBehavior).
enum class SplitBehavior {
  kRemoved,             // matches are dropped
  kIsolated,            // each match is a piece of its own
  kMergedWithPrevious,  // a match joins the piece before it
  kMergedWithNext,      // a match joins the piece after it
  kContiguous,          // runs of adjacent matches are one piece
};

// Splits `text` at the [begin, end) byte ranges `matches` (sorted, disjoint) according to `behavior`;
// `invert` swaps what counts as a match. Empty results are dropped.
std::vector<std::pair<size_t, size_t>> SplitRanges(size_t length, const std::vector<std::pair<size_t, size_t>>& matches,
                                                   SplitBehavior behavior, bool invert);

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const nlohmann::json& spec, const std::string& where);

// GPT-2's ByteLevel pre-tokenizer (regex split, bytes to the byte-level alphabet; no prefix space), for
// vocab.json + merges.txt tokenizers.
absl::StatusOr<std::unique_ptr<PreTokenizer>> Gpt2ByteLevelPreTokenizer();

}  // namespace arach
