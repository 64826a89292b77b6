// The text each token adds after the tokens before it (DecodePiece over the last few ids), as both APIs
// report it with log-probs: a choice's pieces join to its text. A piece may end inside a UTF-8 character
// (byte-level and byte-fallback tokens); callers keep its raw bytes and show U+FFFD in text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach::server {

class PieceDecoder {
 public:
  // `context`: the ids before the first token (its last few decode the first piece).
  PieceDecoder(const Tokenizer& tokenizer, std::span<const int32_t> context);
  // The raw bytes `token` would add now.
  absl::StatusOr<std::string> Piece(int32_t token) const;
  // `token` is the next one.
  void Advance(int32_t token);

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> context_;  // the last ids (at most kDetokenizeContext)
};

}  // namespace arach::server
