// vLLM's allowed_token_ids and bad_words as the mask of tokens a request may sample next: the allowed ids (all
// without them), less the last token of every bad word whose other tokens end the generated text, within the
// structured output's mask when there is one. The mask is SamplerInput::allowed's, so that the CPU sampler and
// the GPU's logit processing apply it as they apply a structured output's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/field_error.h"
#include "engine/sampling/sampling_params.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

// The token sequences a bad word bans, by vLLM's rule: the word without its leading white space, and with one
// space before it where that encodes to a different first token in as many tokens (a word that begins one
// inside a sentence). INVALID_ARGUMENT naming bad_words[i] for a word of white space only, or one whose tokens
// lie outside [0, vocab_size).
absl::StatusOr<std::vector<std::vector<int32_t>>> BadWordTokenIds(std::span<const std::string> bad_words, const Tokenizer& tokenizer,
                                                                 int vocab_size, FieldNames names = EngineFieldName);

class TokenFilter {
 public:
  TokenFilter() = default;  // filters nothing
  // From the request's allowed_token_ids (checked against `vocab_size`; empty: every token) and its bad words'
  // token sequences (BadWordTokenIds). INVALID_ARGUMENT naming bad_words when the single-token bad words ban
  // every allowed token.
  static absl::StatusOr<TokenFilter> Create(const SamplingParams& params, std::vector<std::vector<int32_t>> bad_word_ids,
                                            int vocab_size, FieldNames names = EngineFieldName);

  bool active() const { return active_; }
  // The tokens allowed next, one bit each (bit t of word t / 32, as SamplerInput::allowed), given the structured
  // output's mask (`constraint`; empty: every token) and the tokens generated so far. The span is valid until the
  // next call. INVALID_ARGUMENT when nothing is left to sample.
  absl::StatusOr<std::span<const uint32_t>> Allowed(std::span<const uint32_t> constraint, std::span<const int32_t> generated);

 private:
  bool active_ = false;
  std::vector<uint32_t> allowed_;                  // [ceil(vocab / 32)]: allowed_token_ids, or every token
  std::vector<std::vector<int32_t>> bad_word_ids_;  // each bad word's tokens (BadWordTokenIds)
  std::vector<uint32_t> mask_;                     // [ceil(vocab / 32)]: the last Allowed
};

}  // namespace arach
