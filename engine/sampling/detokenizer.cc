#include "engine/sampling/detokenizer.h"

#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                                               std::span<const int32_t> prompt, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens), stops_(std::move(stop_strings)) {
  for (const std::string& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
  const size_t keep = std::min(prompt.size(), kContextTokens);
  context_.assign(prompt.end() - keep, prompt.end());
}

absl::StatusOr<std::string> IncrementalDetokenizer::DecodeNext(int32_t token) {
  ARACH_ASSIGN_OR_RETURN(const std::string before, tokenizer_.Decode(context_, skip_special_tokens_));
  context_.push_back(token);
  ARACH_ASSIGN_OR_RETURN(std::string after, tokenizer_.Decode(context_, skip_special_tokens_));
  if (context_.size() > kContextTokens) context_.erase(context_.begin());
  size_t common = 0;
  while (common < before.size() && common < after.size() && before[common] == after[common]) ++common;
  return after.substr(common);
}

absl::StatusOr<std::string> IncrementalDetokenizer::Add(int32_t token) {
  if (stopped()) return std::string();
  ARACH_ASSIGN_OR_RETURN(std::string piece, DecodeNext(token));
  bytes_ += piece;
  // A stop string can only end in the new bytes; it may start up to longest_stop_ - 1 bytes earlier.
  const size_t search_from = bytes_.size() >= piece.size() + longest_stop_ ? bytes_.size() - piece.size() - longest_stop_ : 0;
  size_t stop_at = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = bytes_.find(stop, search_from);
    if (at != std::string::npos && at < stop_at) {
      stop_at = at;
      matched_stop_ = stop;
    }
  }
  size_t end;
  if (stop_at != std::string::npos) {
    bytes_.resize(std::max(stop_at, emitted_));
    end = bytes_.size();
  } else {
    end = CompleteUtf8Prefix(bytes_);
    // Hold back the longest tail that could still grow into a stop string.
    size_t hold = 0;
    for (const std::string& stop : stops_) {
      for (size_t len = std::min(stop.size() - 1, end - emitted_); len > hold; --len) {
        if (bytes_.compare(end - len, len, stop, 0, len) == 0) {
          hold = len;
          break;
        }
      }
    }
    end -= hold;
  }
  if (end <= emitted_) return std::string();
  std::string delta = SanitizeUtf8(absl::string_view(bytes_).substr(emitted_, end - emitted_));
  emitted_ = end;
  return delta;
}

std::string IncrementalDetokenizer::Flush() {
  if (emitted_ >= bytes_.size()) return std::string();
  std::string rest = SanitizeUtf8(absl::string_view(bytes_).substr(emitted_));
  emitted_ = bytes_.size();
  return rest;
}

}  // namespace arach
