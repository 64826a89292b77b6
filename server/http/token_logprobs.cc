#include "server/http/token_logprobs.h"

#include "engine/core/status.h"

namespace arach::server::http {

using json = nlohmann::json;

absl::Status CompletionLogprobs::Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top) {
  ARACH_ASSIGN_OR_RETURN(const std::string piece, pieces_.Piece(token));
  if (top == nullptr) {
    top_logprobs_.push_back(nullptr);
  } else {
    json alternatives = json::object();
    for (const TokenLogprob& alternative : *top) {
      ARACH_ASSIGN_OR_RETURN(const std::string alternative_piece, pieces_.Piece(alternative.token));
      alternatives[alternative_piece] = alternative.logprob;
    }
    if (logprob) alternatives[piece] = *logprob;
    top_logprobs_.push_back(std::move(alternatives));
  }
  tokens_.push_back(piece);
  token_logprobs_.push_back(logprob ? json(*logprob) : json(nullptr));
  text_offset_.push_back(offset_);
  offset_ += piece.size();
  pieces_.Advance(token);
  return absl::OkStatus();
}

json CompletionLogprobs::TakeJson() {
  json out = {{"tokens", std::move(tokens_)},
              {"token_logprobs", std::move(token_logprobs_)},
              {"top_logprobs", std::move(top_logprobs_)},
              {"text_offset", std::move(text_offset_)}};
  tokens_ = json::array();
  token_logprobs_ = json::array();
  top_logprobs_ = json::array();
  text_offset_ = json::array();
  return out;
}

namespace {

json ChatEntry(const TokenText& text) {
  json bytes = json::array();
  for (unsigned char c : text.bytes) bytes.push_back(static_cast<int>(c));
  return {{"token", text.bytes}, {"logprob", text.logprob}, {"bytes", std::move(bytes)}};
}

}  // namespace

absl::Status ChatLogprobs::Add(const SampledToken& token) {
  ARACH_ASSIGN_OR_RETURN(const TokenTextWithTop text, pieces_.Next(token));
  json entry = ChatEntry(text.chosen);
  json top = json::array();
  for (const TokenText& alternative : text.top) top.push_back(ChatEntry(alternative));
  entry["top_logprobs"] = std::move(top);
  content_.push_back(std::move(entry));
  return absl::OkStatus();
}

json ChatLogprobs::TakeJson() {
  json out = {{"content", std::move(content_)}};
  content_ = json::array();
  return out;
}

}  // namespace arach::server::http
