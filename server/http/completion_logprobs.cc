#include "server/http/completion_logprobs.h"

#include "engine/core/status.h"
#include "engine/sampling/detokenizer.h"

namespace arach::server::http {

CompletionLogprobs::CompletionLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> context)
    : tokenizer_(tokenizer), context_(context.end() - std::min(context.size(), kDetokenizeContext), context.end()) {}

absl::StatusOr<std::string> CompletionLogprobs::Piece(int32_t token) const {
  return DecodePiece(tokenizer_, context_, token, /*skip_special_tokens=*/false);
}

absl::Status CompletionLogprobs::Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top) {
  ARACH_ASSIGN_OR_RETURN(const std::string piece, Piece(token));
  if (top == nullptr) {
    top_logprobs_.push_back(nullptr);
  } else {
    nlohmann::json alternatives = nlohmann::json::object();
    for (const TokenLogprob& alternative : *top) {
      ARACH_ASSIGN_OR_RETURN(const std::string alternative_piece, Piece(alternative.token));
      alternatives[alternative_piece] = alternative.logprob;
    }
    if (logprob) alternatives[piece] = *logprob;
    top_logprobs_.push_back(std::move(alternatives));
  }
  tokens_.push_back(piece);
  token_logprobs_.push_back(logprob ? nlohmann::json(*logprob) : nlohmann::json(nullptr));
  text_offset_.push_back(offset_);
  offset_ += piece.size();
  context_.push_back(token);
  if (context_.size() > kDetokenizeContext) context_.erase(context_.begin());
  return absl::OkStatus();
}

nlohmann::json CompletionLogprobs::TakeJson() {
  nlohmann::json out = {{"tokens", std::move(tokens_)},
                        {"token_logprobs", std::move(token_logprobs_)},
                        {"top_logprobs", std::move(top_logprobs_)},
                        {"text_offset", std::move(text_offset_)}};
  tokens_ = nlohmann::json::array();
  token_logprobs_ = nlohmann::json::array();
  top_logprobs_ = nlohmann::json::array();
  text_offset_ = nlohmann::json::array();
  return out;
}

}  // namespace arach::server::http
