// tokenizer_config.json: what transformers reads beside tokenizer.json. The special tokens by name
// (bos_token, eos_token, ... written as a string or as an AddedToken object), add_bos_token /
// add_eos_token (which override the post-processor, as transformers' Llama tokenizers do), and the chat
// template(s).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace arach {

struct TokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token;  // the token's content, e.g. "<s>"
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;
  // chat_template: a string (named "default"), or a list of {"name", "template"}.
  std::map<std::string, std::string> chat_templates;
};

// Reads `path`; every malformed field is INVALID_ARGUMENT naming the file and the field.
absl::StatusOr<TokenizerConfig> LoadTokenizerConfig(const std::string& path);
absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(const std::string& json_text, const std::string& source);

}  // namespace arach
