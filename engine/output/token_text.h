// The text of each generated or scored token as both APIs report it beside its log-prob: the piece the
// token adds after the tokens before it (DecodePiece over the last few ids, detokenizer.h), so that a
// choice's pieces join to its text. A piece may end inside a UTF-8 character (byte-level and byte-fallback
// tokens): `bytes` keeps it raw, `text` shows U+FFFD in its place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

struct TokenText {
  int32_t token = 0;
  float logprob = 0.0f;
  std::string bytes;  // raw: may be, or end in, part of a UTF-8 character
  std::string text;   // valid UTF-8 (U+FFFD for a partial character)
};

// A token with its log-prob alternatives, each with its text.
struct TokenTextWithTop {
  TokenText chosen;
  std::vector<TokenText> top;
};

class PieceDecoder {
 public:
  // `context`: the ids before the first token (its last few decode the first piece).
  PieceDecoder(const Tokenizer& tokenizer, std::span<const int32_t> context);
  // The raw bytes `token` would add now; `skip_special_tokens`: as an answer's text that skips special tokens
  // has them (the engine's detokenizer gives the same piece).
  absl::StatusOr<std::string> Piece(int32_t token, bool skip_special_tokens = false) const;
  // `token` with `logprob` as it would be added now.
  absl::StatusOr<TokenText> Text(int32_t token, float logprob) const;
  // `sampled` and its alternatives as they would be added now (alternatives in the context of the same
  // tokens before them); then advances past `sampled.token`.
  absl::StatusOr<TokenTextWithTop> Next(const SampledToken& sampled);
  // `token` is the next one.
  void Advance(int32_t token);

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> context_;  // the last ids (at most kDetokenizeContext)
};

}  // namespace arach
