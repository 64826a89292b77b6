#include "server/http/token_logprobs.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach::server::http {

using json = nlohmann::json;

namespace {

std::string TokenIdName(int32_t token) { return absl::StrCat("token_id:", token); }

// `bytes` are those of the token's name (its raw piece, or "token_id:<id>").
json ChatEntry(const TokenText& text, TokenNaming naming) {
  const std::string name = naming == TokenNaming::kId ? TokenIdName(text.token) : text.bytes;
  json bytes = json::array();
  for (unsigned char c : name) bytes.push_back(static_cast<int>(c));
  return {{"token", name}, {"logprob", text.logprob}, {"bytes", std::move(bytes)}};
}

json ChatEntryWithTop(const TokenTextWithTop& text, TokenNaming naming) {
  json entry = ChatEntry(text.chosen, naming);
  json top = json::array();
  for (const TokenText& alternative : text.top) top.push_back(ChatEntry(alternative, naming));
  entry["top_logprobs"] = std::move(top);
  return entry;
}

}  // namespace

absl::Status CompletionLogprobs::Add(int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>* top) {
  ARACH_ASSIGN_OR_RETURN(const std::string piece, pieces_.Piece(token));
  const auto name = [&](int32_t id) -> absl::StatusOr<std::string> {
    if (naming_ == TokenNaming::kId) return TokenIdName(id);
    return pieces_.Piece(id);
  };
  if (top == nullptr) {
    top_logprobs_.push_back(nullptr);
  } else {
    json alternatives = json::object();
    for (const TokenLogprob& alternative : *top) {
      ARACH_ASSIGN_OR_RETURN(const std::string alternative_name, name(alternative.token));
      alternatives[alternative_name] = alternative.logprob;
    }
    ARACH_ASSIGN_OR_RETURN(const std::string token_name, name(token));
    if (logprob) alternatives[token_name] = *logprob;
    top_logprobs_.push_back(std::move(alternatives));
  }
  ARACH_ASSIGN_OR_RETURN(const std::string token_name, name(token));
  tokens_.push_back(token_name);
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


absl::Status ChatLogprobs::Add(const SampledToken& token) {
  ARACH_ASSIGN_OR_RETURN(const TokenTextWithTop text, pieces_.Next(token));
  content_.push_back(ChatEntryWithTop(text, naming_));
  return absl::OkStatus();
}

json ChatLogprobs::TakeJson() {
  json out = {{"content", std::move(content_)}};
  content_ = json::array();
  return out;
}

absl::Status ContentLogprobs::Add(const SampledToken& token) {
  ARACH_ASSIGN_OR_RETURN(const std::string piece, pieces_.Piece(token.token, skips_special_tokens_));
  ARACH_ASSIGN_OR_RETURN(const TokenTextWithTop text, pieces_.Next(token));
  unplaced_.push_back({{text_end_, text_end_ + piece.size()}, ChatEntryWithTop(text, TokenNaming::kText)});
  text_end_ += piece.size();
  return absl::OkStatus();
}

json ContentLogprobs::Take(std::span<const TextSpan> spans) {
  json entries = json::array();
  for (const TextSpan& span : spans) {
    while (!unplaced_.empty()) {
      const TextSpan& token = unplaced_.front().bytes;
      if (token.end <= span.begin) {  // wholly before the content: its text went elsewhere
        unplaced_.pop_front();
      } else if (token.begin < span.end) {  // overlaps the content
        entries.push_back(std::move(unplaced_.front().entry));
        unplaced_.pop_front();
      } else {
        break;  // after this span
      }
    }
  }
  return entries;
}

absl::StatusOr<json> PromptLogprobsJson(const Tokenizer& tokenizer, std::span<const int32_t> prompt, const FinishInfo& info,
                                        int top_n) {
  const size_t scored = prompt.empty() ? 0 : prompt.size() - 1;
  if (info.prompt_logprobs.size() != scored || info.prompt_ranks.size() != scored ||
      (top_n > 0 && info.prompt_top_logprobs.size() != scored)) {
    return absl::InternalError("the engine returned no log-probs for the prompt");
  }
  json out = json::array();
  if (!prompt.empty()) out.push_back(nullptr);
  PieceDecoder pieces(tokenizer, {});
  for (size_t t = 0; t < scored; ++t) {
    pieces.Advance(prompt[t]);
    const int32_t token = prompt[t + 1];
    json position = json::object();
    const auto add = [&](int32_t id, float logprob, int32_t rank) -> absl::Status {
      ARACH_ASSIGN_OR_RETURN(const TokenText text, pieces.Text(id, logprob));
      position[std::to_string(id)] = {{"logprob", logprob}, {"rank", rank}, {"decoded_token", text.text}};
      return absl::OkStatus();
    };
    ARACH_RETURN_IF_ERROR(add(token, info.prompt_logprobs[t], info.prompt_ranks[t]));
    if (top_n > 0) {
      const std::vector<TokenLogprob>& top = info.prompt_top_logprobs[t];
      for (size_t k = 0; k < top.size() && k < static_cast<size_t>(top_n); ++k) {
        if (top[k].token != token) ARACH_RETURN_IF_ERROR(add(top[k].token, top[k].logprob, static_cast<int32_t>(k + 1)));
      }
    }
    out.push_back(std::move(position));
  }
  return out;
}

}  // namespace arach::server::http
