// Byte-level BPE (GPT-2, GPT-NeoX/Pythia): added tokens cut out, optional Unicode normalization,
// GPT-2 pre-tokenization, bytes mapped to the byte-level alphabet, BPE merges.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

struct ByteLevelBpeOptions {
  NormalizationForm normalization = NormalizationForm::kNone;  // tokenizer.json "normalizer"
  bool add_prefix_space = false;  // ByteLevel: prepend ' ' to text that does not start with one
  bool use_regex = true;          // ByteLevel: split with the GPT-2 pattern first
};

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  // A Hugging Face tokenizer.json whose model is BPE with a ByteLevel pre-tokenizer.
  static absl::StatusOr<std::unique_ptr<ByteLevelBpeTokenizer>> FromTokenizerJson(const std::string& path);
  // GPT-2's vocab.json + merges.txt; "<|endoftext|>" (when in the vocabulary) is a special token.
  static absl::StatusOr<std::unique_ptr<ByteLevelBpeTokenizer>> FromVocabAndMerges(const std::string& vocab_path,
                                                                                   const std::string& merges_path);

  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text) const override;
  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const override;
  int vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  bool prepends_bos() const override { return false; }
  std::string Describe() const override { return description_; }

 private:
  ByteLevelBpeTokenizer(BpeModel model, std::vector<AddedToken> added, ByteLevelBpeOptions options, std::string description);
  absl::Status EncodePlain(absl::string_view text, std::vector<int32_t>& out) const;

  BpeModel model_;
  ByteLevelBpeOptions options_;
  ByteLevelAlphabet alphabet_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized == false
  AddedTokenMatcher normalized_matcher_;  // added tokens with normalized == true
  std::unordered_map<int32_t, std::string> added_content_;  // id -> content
  int vocab_size_ = 0;
  std::string description_;
};

}  // namespace arach
