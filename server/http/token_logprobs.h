// Token log-probs in OpenAI's two shapes, from the engine's token texts (engine/output/token_text.h: the
// piece each token adds, so a choice's pieces join to its text; an echoed prompt's special tokens such as
// BOS have pieces that the echoed text, the prompt as given, lacks); a piece that ends inside a UTF-8
// character shows U+FFFD (chat's `bytes` keep the raw bytes).
//  - completions (legacy): {"tokens", "token_logprobs", "top_logprobs": [{piece: lp}], "text_offset"}, byte
//    offsets into the choice's text; top_logprobs holds the requested alternatives plus the chosen token.
//  - chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}; the
//    Responses API's output_text.logprobs are the same entries, of the content's tokens only (ContentLogprobs).
// And vLLM's prompt_logprobs, for both routes (PromptLogprobsJson).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/output/token_text.h"
#include "engine/request.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/chat_output_parser.h"

namespace arach::server::http {

// How a log-prob entry names its token: by the text it adds, or (vLLM's return_tokens_as_token_ids) as
// "token_id:<id>", which identifies a token whose piece is not whole UTF-8 or is shared by several ids.
enum class TokenNaming { kText, kId };

class CompletionLogprobs {
 public:
  CompletionLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context, TokenNaming naming = TokenNaming::kText)
      : pieces_(tokenizer, context), naming_(naming) {}

  // Appends `token` with its log-prob (null for a prompt's first token) and its alternatives (null: none).
  absl::Status Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top);
  // The lists added since the last call (a stream's delta), as a logprobs object.
  nlohmann::json TakeJson();

 private:
  PieceDecoder pieces_;
  TokenNaming naming_;
  size_t offset_ = 0;  // bytes of text so far (the pieces', whatever the naming)
  nlohmann::json tokens_ = nlohmann::json::array();
  nlohmann::json token_logprobs_ = nlohmann::json::array();
  nlohmann::json top_logprobs_ = nlohmann::json::array();
  nlohmann::json text_offset_ = nlohmann::json::array();
};

class ChatLogprobs {
 public:
  ChatLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context, TokenNaming naming = TokenNaming::kText)
      : pieces_(tokenizer, context), naming_(naming) {}

  absl::Status Add(const SampledToken& token);
  // {"content": [...]} with the tokens added since the last call.
  nlohmann::json TakeJson();

 private:
  PieceDecoder pieces_;
  TokenNaming naming_;
  nlohmann::json content_ = nlohmann::json::array();
};

// The chat-shaped entries of the tokens a turn's content came from, for the Responses API's output_text (its
// reasoning and tool calls carry none). Tokens are added as they come and placed by the spans of the turn's text
// that the content was taken from (ChatOutputDelta::content_from): a token whose bytes in that text overlap the
// content is the content's. A token's bytes are its piece as the answer's text has it (none for a special token
// where the text skips them).
class ContentLogprobs {
 public:
  // `text_skips_special_tokens`: as the engine request's skip_special_tokens.
  ContentLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context, bool text_skips_special_tokens)
      : pieces_(tokenizer, context), skips_special_tokens_(text_skips_special_tokens) {}

  // The next generated token (its text comes after the text of the tokens added before).
  absl::Status Add(const SampledToken& token);
  // The entries of the tokens that `spans` overlap (spans after those of earlier calls, in order), in order; tokens
  // wholly before a span said something else (reasoning, a call, a marker) and are dropped.
  nlohmann::json Take(std::span<const TextSpan> spans);

 private:
  struct Unplaced {
    TextSpan bytes;  // where the token's piece lies in the turn's text
    nlohmann::json entry;
  };
  PieceDecoder pieces_;
  bool skips_special_tokens_;
  size_t text_end_ = 0;  // bytes of the turn's text that the tokens added so far make
  std::deque<Unplaced> unplaced_;
};

// vLLM's prompt_logprobs of `prompt`: null for its first token, then per token an object keyed by token id,
// {"<id>": {"logprob", "rank", "decoded_token"}}, holding the token itself (its rank in the vocabulary) and its
// `top_n` most likely alternatives (ranked 1..top_n), each decoded as the piece it would add after the prompt
// tokens before it. `info` carries the engine's prompt log-probs, ranks and alternatives (at least top_n).
absl::StatusOr<nlohmann::json> PromptLogprobsJson(const Tokenizer& tokenizer, std::span<const int32_t> prompt, const FinishInfo& info,
                                                  int top_n);

}  // namespace arach::server::http
