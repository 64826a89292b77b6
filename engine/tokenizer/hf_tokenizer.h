// The Hugging Face tokenizers pipeline for BPE models, as a tokenizer.json describes it, component by
// component: added tokens cut out of the raw text (then of each normalized piece), normalizer,
// pre-tokenizer, the BPE model, post-processor (special tokens around a sequence) and decoder.
// GPT-2's vocab.json + merges.txt load into the same pipeline (ByteLevel, BPE, "<|endoftext|>").
// Every component type and option this file does not implement is an error naming it at load time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/decoders.h"
#include "engine/tokenizer/normalizers.h"
#include "engine/tokenizer/post_processors.h"
#include "engine/tokenizer/pre_tokenizers.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_config.h"

namespace arach {

class HfTokenizer final : public Tokenizer {
 public:
  // tokenizer.json at `path`, with tokenizer_config.json's settings when `config` is given.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromTokenizerJson(const std::string& path, TokenizerConfig config = {});
  // GPT-2's vocab.json + merges.txt; "<|endoftext|>" (when in the vocabulary) is a special token.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromVocabAndMerges(const std::string& vocab_path,
                                                                        const std::string& merges_path);

  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special_tokens) const override;
  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  int vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::string Describe() const override { return description_; }
  const TokenizerConfig& config() const override { return config_; }

 private:
  struct Parts {
    std::optional<BpeModel> model;  // always set before Assemble
    std::vector<AddedToken> added;
    std::unique_ptr<Normalizer> normalizer;        // may be null
    std::unique_ptr<PreTokenizer> pre_tokenizer;   // may be null
    std::unique_ptr<PostProcessor> post_processor;  // may be null
    std::unique_ptr<Decoder> decoder;              // may be null: tokens joined with spaces
    TokenizerConfig config;
    std::string description;
  };
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> Assemble(Parts parts);
  explicit HfTokenizer(Parts parts);
  // Normalizes, pre-tokenizes and encodes one piece of plain text (no raw added tokens in it).
  absl::Status EncodePlain(const std::string& text, bool at_start, std::vector<int32_t>& ids) const;

  BpeModel model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized == false
  AddedTokenMatcher normalized_matcher_;  // added tokens with normalized == true (their normalized content)
  std::unordered_map<int32_t, AddedToken> added_by_id_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  TokenizerConfig config_;
  int vocab_size_ = 0;
  std::string description_;
};

}  // namespace arach
