// Turns a stream of generated token ids into text deltas: a delta never ends inside a UTF-8 character
// and never shows the start of a possible stop string; when a stop string appears the text ends just
// before it (or, with `include_stop_string`, just after it). Malformed byte sequences a model may
// produce are replaced by U+FFFD.
//
// Each token is decoded in the context of the few tokens before it (starting with the prompt's last
// ones): the new text is Decode(context + token) minus Decode(context). So decoders whose output depends
// on the neighbours (SentencePiece's leading "▁" stripped at the start of a sequence, byte-fallback
// pieces of one character arriving one at a time) give exactly the text of decoding the whole sequence.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

// The bytes `token` adds when decoded after `context` (raw: may be, or end in, part of a UTF-8 character):
// Decode(context + token) minus Decode(context).
absl::StatusOr<std::string> DecodePiece(const Tokenizer& tokenizer, std::span<const int32_t> context, int32_t token,
                                        bool skip_special_tokens);

inline constexpr size_t kDetokenizeContext = 4;

class IncrementalDetokenizer {
 public:
  // `prompt` gives the context of the first generated token (its last kDetokenizeContext ids are kept).
  IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                         std::span<const int32_t> prompt = {}, bool skip_special_tokens = false,
                         bool include_stop_string = false);

  // Adds a generated token; returns the text that can be shown now.
  absl::StatusOr<std::string> Add(int32_t token);
  // At the end of generation: what is still held back (a trailing partial character becomes U+FFFD).
  std::string Flush();
  // Whether a stop string was found (and which one).
  bool stopped() const { return !matched_stop_.empty(); }
  const std::string& matched_stop() const { return matched_stop_; }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  bool include_stop_string_;  // the text keeps the stop string that ends it
  std::vector<int32_t> context_;  // the last ids decoded (at most kDetokenizeContext)
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::string bytes_;    // every byte decoded so far (truncated at a stop string)
  size_t emitted_ = 0;   // bytes_ [0, emitted_) were returned
  std::string matched_stop_;
};

}  // namespace arach
