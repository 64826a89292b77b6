// Regular expressions with Unicode classes and lookaround, as tokenizer.json files write them
// (`\p{L}`, `\p{N}`, `(?i:...)`, `\s+(?!\S)`): PCRE2 in UTF + UCP mode, JIT-compiled when available.
// Matching is thread-safe (match data is per call).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

class Regex {
 public:
  // INVALID_ARGUMENT with PCRE2's message and the offset in the pattern when it does not compile.
  static absl::StatusOr<std::shared_ptr<const Regex>> Compile(absl::string_view pattern);
  // A pattern that matches `literal` exactly.
  static std::string Escape(absl::string_view literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The non-overlapping matches in `text` (valid UTF-8), leftmost first, as byte ranges [begin, end).
  // After an empty match the search resumes one character later.
  std::vector<std::pair<size_t, size_t>> FindAll(absl::string_view text) const;
  // `text` with every match replaced by `replacement` (taken literally).
  std::string ReplaceAll(absl::string_view text, absl::string_view replacement) const;
  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

}  // namespace arach
