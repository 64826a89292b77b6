#include "engine/output/detokenizer.h"

#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                                               std::span<const int32_t> prompt, bool skip_special_tokens,
                                               bool include_stop_string)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      include_stop_string_(include_stop_string),
      stops_(std::move(stop_strings)) {
  for (const std::string& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
  const size_t keep = std::min(prompt.size(), kDetokenizeContext);
  context_.assign(prompt.end() - keep, prompt.end());
}

absl::StatusOr<std::string> DecodePiece(const Tokenizer& tokenizer, std::span<const int32_t> context, int32_t token,
                                        bool skip_special_tokens) {
  ARACH_ASSIGN_OR_RETURN(const std::string before, tokenizer.Decode(context, skip_special_tokens));
  std::vector<int32_t> extended(context.begin(), context.end());
  extended.push_back(token);
  ARACH_ASSIGN_OR_RETURN(std::string after, tokenizer.Decode(extended, skip_special_tokens));
  size_t common = 0;
  while (common < before.size() && common < after.size() && before[common] == after[common]) ++common;
  return after.substr(common);
}

absl::StatusOr<std::string> IncrementalDetokenizer::Add(int32_t token) {
  if (stopped()) return std::string();
  ARACH_ASSIGN_OR_RETURN(std::string piece, DecodePiece(tokenizer_, context_, token, skip_special_tokens_));
  context_.push_back(token);
  if (context_.size() > kDetokenizeContext) context_.erase(context_.begin());
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
    const size_t text_end = include_stop_string_ ? stop_at + matched_stop_.size() : stop_at;
    bytes_.resize(std::max(text_end, emitted_));
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
