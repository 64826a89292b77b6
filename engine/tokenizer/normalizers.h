// tokenizer.json normalizers: each turns one piece of the input (the text between added tokens) into its
// normalized form before pre-tokenization. NFC, NFKC, NFD, NFKD, Lowercase, Prepend, Replace (string or
// regex), Strip, StripAccents, Sequence; `null` means none.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8; so is the result.
  virtual absl::StatusOr<std::string> Normalize(std::string text) const = 0;
};

// The normalizer described by `spec` (an object with a "type"); `where` names it in errors.
// Unknown types and options are INVALID_ARGUMENT naming them.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const nlohmann::json& spec, const std::string& where);

}  // namespace arach
