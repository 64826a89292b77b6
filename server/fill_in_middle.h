// Fill-in-the-middle prompts (OpenAI's `suffix` on completions): a code model trained to write the text between a
// prefix and a suffix is prompted with its own markers around them, in the order it was trained on (prefix,
// suffix, middle), and writes the middle. The markers are read from the served model's vocabulary:
//   Qwen2.5-Coder, StarCoder2 (and every Qwen2.5 / Qwen3 vocabulary): <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>
//   StarCoder, SantaCoder:                                              <fim_prefix>P<fim_suffix>S<fim_middle>
//   DeepSeek-Coder:                                                     <｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>
// The gap's text ends at the model's end of sequence, or at a token that begins something else: the vocabulary's
// fill-in-the-middle padding, repository and file markers (<|fim_pad|>, <|repo_name|>, <|file_sep|> and StarCoder's
// kin) or the three markers again (another gap); such a token is not part of the text (as llama.cpp's infill ends).
// Both APIs build the prompt here (HTTP /v1/completions `suffix`, gRPC GenerateRequest.suffix).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/sampling/sampling_params.h"
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

struct FillInMiddle {
  std::string prompt;                   // the text prompt (tokenized as any text prompt)
  std::vector<int32_t> end_token_ids;   // the tokens that end the gap's text besides the model's end of sequence
};

// The prompt that asks `tokenizer`'s model for the text between `prefix` and `suffix`, and the tokens that end it.
// INVALID_ARGUMENT naming `suffix_field` where the model has no markers.
absl::StatusOr<FillInMiddle> FillInMiddlePrompt(const Tokenizer& tokenizer, absl::string_view prefix, absl::string_view suffix,
                                                const std::string& suffix_field);

// Adds `fim`'s end tokens to `sampling`'s stop token ids (reported as stop_reason when one ends the text); none with
// ignore_eos, which asks for the text to go on to max_tokens.
void AddFillInMiddleEnds(const FillInMiddle& fim, SamplingParams* sampling);

}  // namespace arach::server
