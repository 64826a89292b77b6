// Token log-probs in OpenAI's two shapes, from the engine's token texts (engine/output/token_text.h: the
// piece each token adds, so a choice's pieces join to its text; an echoed prompt's special tokens such as
// BOS have pieces that the echoed text, the prompt as given, lacks); a piece that ends inside a UTF-8
// character shows U+FFFD (chat's `bytes` keep the raw bytes).
//  - completions (legacy): {"tokens", "token_logprobs", "top_logprobs": [{piece: lp}], "text_offset"}, byte
//    offsets into the choice's text; top_logprobs holds the requested alternatives plus the chosen token.
//  - chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/output/token_text.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

class CompletionLogprobs {
 public:
  CompletionLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context) : pieces_(tokenizer, context) {}

  // Appends `token` with its log-prob (null for a prompt's first token) and its alternatives (null: none).
  absl::Status Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top);
  // The lists added since the last call (a stream's delta), as a logprobs object.
  nlohmann::json TakeJson();

 private:
  PieceDecoder pieces_;
  size_t offset_ = 0;  // bytes of text so far
  nlohmann::json tokens_ = nlohmann::json::array();
  nlohmann::json token_logprobs_ = nlohmann::json::array();
  nlohmann::json top_logprobs_ = nlohmann::json::array();
  nlohmann::json text_offset_ = nlohmann::json::array();
};

class ChatLogprobs {
 public:
  ChatLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context) : pieces_(tokenizer, context) {}

  absl::Status Add(const SampledToken& token);
  // {"content": [...]} with the tokens added since the last call.
  nlohmann::json TakeJson();

 private:
  PieceDecoder pieces_;
  nlohmann::json content_ = nlohmann::json::array();
};

}  // namespace arach::server::http
