// tokenizer.json decoders: turn the token strings of a sequence back into text. ByteLevel, Metaspace,
// Replace, ByteFallback, Fuse, Strip and Sequence. The result is raw bytes: a sequence may end inside a
// UTF-8 character (a byte-fallback piece, a byte-level token), which streaming callers hold back; invalid
// bytes are replaced by U+FFFD only when text is finally shown.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Transforms the chain of token strings (tokenizers' decode_chain).
  virtual void DecodeChain(std::vector<std::string>& tokens) const = 0;
};

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const nlohmann::json& spec, const std::string& where);

// GPT-2's byte-level decoder, for vocab.json + merges.txt tokenizers.
std::unique_ptr<Decoder> ByteLevelDecoder();

}  // namespace arach
