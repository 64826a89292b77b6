#include "server/piece_decoder.h"

#include <algorithm>

#include "engine/sampling/detokenizer.h"

namespace arach::server {

PieceDecoder::PieceDecoder(const Tokenizer& tokenizer, std::span<const int32_t> context)
    : tokenizer_(tokenizer), context_(context.end() - std::min(context.size(), kDetokenizeContext), context.end()) {}

absl::StatusOr<std::string> PieceDecoder::Piece(int32_t token) const {
  return DecodePiece(tokenizer_, context_, token, /*skip_special_tokens=*/false);
}

void PieceDecoder::Advance(int32_t token) {
  context_.push_back(token);
  if (context_.size() > kDetokenizeContext) context_.erase(context_.begin());
}

}  // namespace arach::server
