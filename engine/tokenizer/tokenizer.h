// Text <-> token ids. Implementations: byte-level BPE (GPT-2 vocab.json + merges.txt, or a Hugging Face
// tokenizer.json such as GPT-NeoX's) and the llama2.c vocabulary (tokenizer.bin / tok512.bin).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text` (valid UTF-8, else INVALID_ARGUMENT). Special tokens written in the text
  // (e.g. "<|endoftext|>") become their ids. No BOS is added; see EncodePrompt.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text) const = 0;
  // The bytes `ids` stand for, concatenated. The result may end inside a UTF-8 character when the ids
  // do (streaming callers hold such a tail back). Ids outside the vocabulary are INVALID_ARGUMENT.
  virtual absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const = 0;
  // One more than the largest id the tokenizer knows.
  virtual int vocab_size() const = 0;
  // The id of a token written exactly as in the vocabulary (e.g. "<|endoftext|>"), if any.
  virtual std::optional<int32_t> TokenToId(absl::string_view token) const = 0;
  // Whether prompts conventionally start with BOS (SentencePiece-style vocabularies) or not (GPT-2 BPE).
  virtual bool prepends_bos() const = 0;
  // Short description, e.g. "byte-level BPE (tokenizer.json, 50277 tokens)".
  virtual std::string Describe() const = 0;
};

// Loads the tokenizer of model folder `dir`: tokenizer.json, else vocab.json + merges.txt, else
// tokenizer.bin / tok*.bin (llama2.c). Errors name the file and what is wrong with it.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& dir);

// Encodes a prompt, prepending `bos_id` when the tokenizer's convention asks for it and bos_id >= 0.
absl::StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text, int bos_id);

}  // namespace arach
