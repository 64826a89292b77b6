// The log-probs of a completion choice in OpenAI's legacy shape:
//   {"tokens": [piece, ...], "token_logprobs": [lp | null, ...], "top_logprobs": [{piece: lp, ...} | null, ...],
//    "text_offset": [byte offset of each piece in the choice's text, ...]}
// A piece is the text its token adds after the tokens before it (DecodePiece), so the pieces of a choice
// join to its text (an echoed prompt's special tokens such as BOS have pieces that the echoed text, the
// prompt as given, lacks: offsets count the pieces); a piece that ends inside a UTF-8 character shows
// U+FFFD. top_logprobs holds the requested number of most likely tokens plus the chosen one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

class CompletionLogprobs {
 public:
  // `context`: the ids before the first token added (its last few decode the first piece).
  CompletionLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context);

  // Appends `token` with its log-prob (null for a prompt's first token) and its alternatives (null: none).
  absl::Status Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top);
  // The lists added since the last call (a stream's delta), as a logprobs object.
  nlohmann::json TakeJson();

 private:
  absl::StatusOr<std::string> Piece(int32_t token) const;

  const Tokenizer& tokenizer_;
  std::vector<int32_t> context_;  // the last ids added (at most kDetokenizeContext)
  size_t offset_ = 0;             // bytes of text so far
  nlohmann::json tokens_ = nlohmann::json::array();
  nlohmann::json token_logprobs_ = nlohmann::json::array();
  nlohmann::json top_logprobs_ = nlohmann::json::array();
  nlohmann::json text_offset_ = nlohmann::json::array();
};

}  // namespace arach::server::http
