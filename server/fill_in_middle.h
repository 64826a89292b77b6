// Fill-in-the-middle prompts (OpenAI's `suffix` on completions): a code model trained to write the text between a
// prefix and a suffix is prompted with its own markers around them, in the order it was trained on (prefix,
// suffix, middle), and writes the middle. The markers are read from the served model's vocabulary:
//   Qwen2.5-Coder, StarCoder2 (and every Qwen2.5 / Qwen3 vocabulary): <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>
//   StarCoder, SantaCoder:                                              <fim_prefix>P<fim_suffix>S<fim_middle>
//   DeepSeek-Coder:                                                     <｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>
// Both APIs build the prompt here (HTTP /v1/completions `suffix`, gRPC GenerateRequest.suffix).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach::server {

struct FillInMiddleMarkers {
  std::string prefix;  // before the text before the gap: <|fim_prefix|>
  std::string suffix;  // before the text after the gap: <|fim_suffix|>
  std::string middle;  // after both: the model writes the gap's text from here, <|fim_middle|>
};

// The markers of the first family above whose three markers are each one token of `tokenizer`'s vocabulary;
// nullopt for a model without them.
std::optional<FillInMiddleMarkers> FillInMiddleMarkersOf(const Tokenizer& tokenizer);

// The text prompt (tokenized as any text prompt) that asks `tokenizer`'s model for the text between `prefix` and
// `suffix`. INVALID_ARGUMENT naming `suffix_field` where the model has no markers.
absl::StatusOr<std::string> FillInMiddlePrompt(const Tokenizer& tokenizer, absl::string_view prefix, absl::string_view suffix,
                                               const std::string& suffix_field);

}  // namespace arach::server
