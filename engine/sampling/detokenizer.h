// Turns a stream of generated token ids into text deltas: a delta never ends inside a UTF-8 character
// and never shows the start of a possible stop string; when a stop string appears the text ends just
// before it. Malformed byte sequences a model may produce are replaced by U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings);

  // Adds a generated token; returns the text that can be shown now.
  absl::StatusOr<std::string> Add(int32_t token);
  // At the end of generation: what is still held back (a trailing partial character becomes U+FFFD).
  std::string Flush();
  // Whether a stop string was found (and which one).
  bool stopped() const { return !matched_stop_.empty(); }
  const std::string& matched_stop() const { return matched_stop_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::string bytes_;    // every byte decoded so far (truncated at a stop string)
  size_t emitted_ = 0;   // bytes_ [0, emitted_) were returned
  std::string matched_stop_;
};

}  // namespace arach
