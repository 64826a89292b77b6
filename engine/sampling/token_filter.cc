#include "engine/sampling/token_filter.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {
namespace {

size_t WordsFor(int vocab_size) { return (static_cast<size_t>(vocab_size) + 31) / 32; }

void Clear(std::vector<uint32_t>& mask, int32_t token) { mask[static_cast<size_t>(token) / 32] &= ~(1u << (token % 32)); }

}  // namespace

absl::StatusOr<std::vector<std::vector<int32_t>>> BadWordTokenIds(std::span<const std::string> bad_words, const Tokenizer& tokenizer,
                                                                 int vocab_size, FieldNames names) {
  std::vector<std::vector<int32_t>> sequences;
  for (size_t i = 0; i < bad_words.size(); ++i) {
    const absl::string_view word = absl::StripLeadingAsciiWhitespace(bad_words[i]);
    if (word.empty()) return InvalidFieldAt(names, "bad_words", i, "has no character other than white space");
    std::vector<int32_t> bare;
    for (const bool space_before : {false, true}) {
      absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(space_before ? absl::StrCat(" ", word) : std::string(word),
                                                                 /*add_special_tokens=*/false);
      if (!ids.ok()) return InvalidFieldAt(names, "bad_words", i, ids.status().message());
      if (ids->empty()) return InvalidFieldAt(names, "bad_words", i, "encodes to no token");
      for (int32_t id : *ids) {
        if (id < 0 || id >= vocab_size) {
          return InvalidFieldAt(names, "bad_words", i, absl::StrCat("token id ", id, " is outside the vocabulary [0, ", vocab_size, ")"));
        }
      }
      if (!space_before) {
        bare = *ids;
        sequences.push_back(std::move(*ids));
      } else if ((*ids)[0] != bare[0] && ids->size() == bare.size()) {  // the word as it begins inside a sentence
        sequences.push_back(std::move(*ids));
      }
    }
  }
  return sequences;
}

absl::StatusOr<TokenFilter> TokenFilter::Create(const SamplingParams& params, std::vector<std::vector<int32_t>> bad_word_ids,
                                                int vocab_size, FieldNames names) {
  TokenFilter filter;
  if (params.allowed_token_ids.empty() && bad_word_ids.empty()) return filter;
  ARACH_RETURN_IF_ERROR(CheckTokenIds(params.allowed_token_ids, vocab_size, "allowed_token_ids", names));
  filter.active_ = true;
  filter.allowed_.assign(WordsFor(vocab_size), 0u);
  if (params.allowed_token_ids.empty()) {
    for (int32_t t = 0; t < vocab_size; ++t) filter.allowed_[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
  } else {
    for (int32_t t : params.allowed_token_ids) filter.allowed_[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
  }
  std::vector<uint32_t> left = filter.allowed_;  // what the single-token bad words leave
  for (const std::vector<int32_t>& word : bad_word_ids) {
    if (word.size() == 1) Clear(left, word[0]);
  }
  if (std::all_of(left.begin(), left.end(), [](uint32_t w) { return w == 0; })) {
    return InvalidField(names, "bad_words", params.allowed_token_ids.empty() ? "ban every token of the vocabulary"
                                                                             : "ban every token of allowed_token_ids");
  }
  filter.bad_word_ids_ = std::move(bad_word_ids);
  return filter;
}

absl::StatusOr<std::span<const uint32_t>> TokenFilter::Allowed(std::span<const uint32_t> constraint,
                                                               std::span<const int32_t> generated) {
  mask_ = allowed_;
  if (!constraint.empty()) {
    for (size_t w = 0; w < mask_.size(); ++w) mask_[w] &= w < constraint.size() ? constraint[w] : 0u;
  }
  for (const std::vector<int32_t>& word : bad_word_ids_) {
    const size_t prefix = word.size() - 1;
    if (prefix > generated.size()) continue;
    if (std::equal(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(prefix), generated.end() - static_cast<std::ptrdiff_t>(prefix))) {
      Clear(mask_, word.back());
    }
  }
  if (std::none_of(mask_.begin(), mask_.end(), [](uint32_t w) { return w != 0; })) {
    return absl::InvalidArgumentError(constraint.empty() ? "allowed_token_ids and bad_words leave no token to sample"
                                                         : "allowed_token_ids and bad_words leave no token the structured output allows");
  }
  return std::span<const uint32_t>(mask_);
}

}  // namespace arach
