#include "engine/output/token_text.h"

#include <algorithm>

#include "engine/core/status.h"
#include "engine/output/detokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

PieceDecoder::PieceDecoder(const Tokenizer& tokenizer, std::span<const int32_t> context)
    : tokenizer_(tokenizer), context_(context.end() - std::min(context.size(), kDetokenizeContext), context.end()) {}

absl::StatusOr<std::string> PieceDecoder::Piece(int32_t token, bool skip_special_tokens) const {
  return DecodePiece(tokenizer_, context_, token, skip_special_tokens);
}

absl::StatusOr<TokenText> PieceDecoder::Text(int32_t token, float logprob) const {
  ARACH_ASSIGN_OR_RETURN(std::string bytes, Piece(token));
  TokenText out;
  out.token = token;
  out.logprob = logprob;
  out.text = SanitizeUtf8(bytes);
  out.bytes = std::move(bytes);
  return out;
}

absl::StatusOr<TokenTextWithTop> PieceDecoder::Next(const SampledToken& sampled) {
  TokenTextWithTop out;
  ARACH_ASSIGN_OR_RETURN(out.chosen, Text(sampled.token, sampled.logprob));
  for (const TokenLogprob& alternative : sampled.top) {
    ARACH_ASSIGN_OR_RETURN(TokenText text, Text(alternative.token, alternative.logprob));
    out.top.push_back(std::move(text));
  }
  Advance(sampled.token);
  return out;
}

void PieceDecoder::Advance(int32_t token) {
  context_.push_back(token);
  if (context_.size() > kDetokenizeContext) context_.erase(context_.begin());
}

}  // namespace arach
