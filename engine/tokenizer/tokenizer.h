// Text <-> token ids. Implementations: the Hugging Face tokenizers pipeline for BPE models
// (hf_tokenizer.h: a tokenizer.json, or GPT-2's vocab.json + merges.txt) and the llama2.c vocabulary
// (tokenizer.bin / tok512.bin).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/tokenizer_config.h"

namespace arach {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text` (valid UTF-8, else INVALID_ARGUMENT). Added tokens written in the text (e.g.
  // "<|endoftext|>") become their ids. With add_special_tokens, the special tokens the model expects
  // around a sequence are added too (the post-processor: BOS for Llama 2; nothing for GPT-2).
  virtual absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special_tokens) const = 0;
  // The bytes `ids` stand for, through the tokenizer's decoder (special tokens included unless skipped).
  // The result may end inside, or hold, incomplete UTF-8 characters (byte pieces): streaming callers hold a
  // partial tail back and replace what stays invalid by U+FFFD. Ids the tokenizer does not know decode to
  // nothing (as Hugging Face tokenizers does: models pad their vocabularies).
  virtual absl::StatusOr<std::string> Decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  // One more than the largest id the tokenizer knows.
  virtual int vocab_size() const = 0;
  // The id of a token written exactly as in the vocabulary (e.g. "<|endoftext|>"), if any.
  virtual std::optional<int32_t> TokenToId(absl::string_view token) const = 0;
  // The token `id` as the vocabulary writes it (TokenToId's inverse: "Ġthe" in a byte-level BPE, "▁the" in a
  // SentencePiece one, "<|endoftext|>"), if the tokenizer knows the id. Hugging Face's convert_ids_to_tokens.
  virtual std::optional<std::string> IdToToken(int32_t id) const = 0;
  // Whether `id` is a special token (dropped by Decode with skip_special_tokens).
  virtual bool IsSpecial(int32_t id) const = 0;
  // Short description, e.g. "BPE (dir/tokenizer.json)".
  virtual std::string Describe() const = 0;
  // tokenizer_config.json's settings (special token names, chat templates); empty where there is none.
  virtual const TokenizerConfig& config() const;
};

// Loads the tokenizer of model folder `dir`: tokenizer.json (with tokenizer_config.json when present),
// else vocab.json + merges.txt, else tokenizer.bin / tok*.bin (llama2.c). Errors name the file and what
// is wrong with it (an unsupported component or option is named).
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& dir);

// Encodes a prompt the way the model expects it: Encode(text, add_special_tokens = true).
absl::StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text);

}  // namespace arach
