#include "server/http/similarity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/embedding_answer.h"
#include "server/http/embeddings.h"
#include "server/http/generation_call.h"
#include "server/http/http_call.h"
#include "server/http/similarity_request.h"
#include "server/request_limits.h"
#include "server/similarity_scores.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// Scores pairs of its texts: by the cosine of their embeddings (one engine request per text, in order), or where the
// model serves as a cross-encoder (Engine::classifier_token_ids), by classifying each pair (one request per pair);
// the answer's shape is the route's (WholeAnswer).
class SimilarityCall : public GenerationCall {
 public:
  SimilarityCall(ServiceContext& context, CallTicket ticket, GenerationFields fields, ResolvedVariant variant, Identity identity,
                 std::vector<NamedText> texts, std::vector<std::pair<size_t, size_t>> pairs)
      : GenerationCall(context, std::move(ticket), std::move(fields), std::move(variant), std::move(identity)),
        texts_(std::move(texts)),
        pairs_(std::move(pairs)),
        cross_encoder_(!engine().classifier_token_ids().empty()) {}

  // Tokenizes the texts and submits one embedding request each (or one request per pair to classify); more
  // requests than one call may make is a 400 naming `count_field`.
  absl::Status Start(const std::string& count_field) {
    Engine& e = engine();
    std::vector<EngineRequest> requests;
    std::vector<std::string> text_fields;
    if (cross_encoder_) {
      ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(e, pairs_.size(), count_field, std::nullopt));
      for (const auto& [a, b] : pairs_) {
        ARACH_ASSIGN_OR_RETURN(EngineRequest r,
                               PairEngineRequest(e, limits(), texts_[a], texts_[b], fields().truncate_prompt_tokens, variant()));
        requests.push_back(std::move(r));
        text_fields.push_back(texts_[b].field);
      }
      return Submit(std::move(requests), text_fields);
    }
    ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(e, texts_.size(), count_field, std::nullopt));
    for (const NamedText& text : texts_) {
      PromptInput input;
      input.text = text.text;
      ARACH_ASSIGN_OR_RETURN(EngineRequest r, EmbeddingEngineRequest(e, limits(), input, fields().truncate_prompt_tokens, variant(), text.field));
      requests.push_back(std::move(r));
      text_fields.push_back(text.field);
    }
    return Submit(std::move(requests), text_fields);
  }

 protected:
  std::string ObjectName() const override { return "list"; }
  json ChoiceJson(int /*index*/, Choice& /*choice*/, bool /*final*/) override { return json::object(); }  // (WholeAnswer's own)

  // Each pair's score, in order, once every request has answered (RespondWhole): the cosine similarity of its
  // texts' embeddings, or the cross-encoder's ClassifierScore; nullopt after Fail.
  std::optional<std::vector<double>> PairScores() {
    if (cross_encoder_) {
      std::vector<double> scores;
      for (size_t c = 0; c < choices().size(); ++c) {
        const std::vector<float>& logits = choices()[c].finish->class_logits;
        if (logits.size() != engine().classifier_token_ids().size()) {
          Fail(absl::InternalError(absl::StrCat(texts_[pairs_[c].second].field, ": the engine returned no class logits")));
          return std::nullopt;
        }
        scores.push_back(ClassifierScore(logits));
      }
      return scores;
    }
    for (size_t c = 0; c < choices().size(); ++c) {
      if (choices()[c].finish->embedding.empty()) {
        Fail(absl::InternalError(absl::StrCat(texts_[c].field, ": the engine returned no hidden state")));
        return std::nullopt;
      }
    }
    std::vector<double> scores;
    for (const auto& [a, b] : pairs_) scores.push_back(CosineSimilarity(choices()[a].finish->embedding, choices()[b].finish->embedding));
    return scores;
  }
  // The envelope of the answer (id, created, model, arach_variant) with the usage: every text's tokens.
  json AnswerEnvelope() const {
    int tokens = 0;
    for (const Choice& choice : choices()) tokens += choice.finish->usage.prompt_tokens;
    json body = Envelope(json::array());
    body.erase("choices");
    body["usage"] = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
    return body;
  }

 private:
  std::vector<NamedText> texts_;
  std::vector<std::pair<size_t, size_t>> pairs_;  // indices into texts_
  bool cross_encoder_;  // pairs are classified, not embedded
};

// The query is text 0, document i text i + 1.
class RerankCall : public SimilarityCall {
 public:
  RerankCall(ServiceContext& context, CallTicket ticket, RerankRequest request, ResolvedVariant variant, const CallOrigin& origin)
      : SimilarityCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/rerank", "rerank-", origin.answer_deadline}, TextsOf(request),
                       PairsOf(request.documents.size())),
        request_(std::move(request)) {}

 protected:
  json WholeAnswer() override {
    const std::optional<std::vector<double>> scores = PairScores();
    if (!scores) return json();
    json results = json::array();
    for (const size_t i : RankBestFirst(*scores, request_.top_n)) {
      json result = {{"index", i}, {"relevance_score", (*scores)[i]}};
      if (request_.return_documents) result["document"] = {{"text", request_.documents[i]}};
      results.push_back(std::move(result));
    }
    json body = AnswerEnvelope();
    body.erase("object");
    body["results"] = std::move(results);
    return body;
  }

 private:
  static std::vector<NamedText> TextsOf(const RerankRequest& request) {
    std::vector<NamedText> texts = {{request.query, "query"}};
    for (size_t i = 0; i < request.documents.size(); ++i) texts.push_back({request.documents[i], absl::StrCat("documents[", i, "]")});
    return texts;
  }
  static std::vector<std::pair<size_t, size_t>> PairsOf(size_t documents) {
    std::vector<std::pair<size_t, size_t>> pairs;
    for (size_t i = 0; i < documents; ++i) pairs.emplace_back(0, i + 1);
    return pairs;
  }

  RerankRequest request_;
};

// text_1's texts first, then text_2's; one text_1 pairs with every text_2, else text_1[i] with text_2[i].
class ScoreCall : public SimilarityCall {
 public:
  ScoreCall(ServiceContext& context, CallTicket ticket, const SimilarityScoreRequest& request, ResolvedVariant variant,
            const CallOrigin& origin)
      : SimilarityCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/score", "score-", origin.answer_deadline}, TextsOf(request), PairsOf(request)) {}

 protected:
  json WholeAnswer() override {
    const std::optional<std::vector<double>> scores = PairScores();
    if (!scores) return json();
    json data = json::array();
    for (size_t i = 0; i < scores->size(); ++i) data.push_back({{"index", i}, {"object", "score"}, {"score", (*scores)[i]}});
    json body = AnswerEnvelope();
    body["data"] = std::move(data);
    return body;
  }

 private:
  static std::vector<NamedText> TextsOf(const SimilarityScoreRequest& request) {
    std::vector<NamedText> texts;
    for (const auto& [param, list] : {std::pair{"text_1", &request.text_1}, {"text_2", &request.text_2}}) {
      for (size_t i = 0; i < list->size(); ++i) {
        texts.push_back({(*list)[i], list->size() == 1 ? std::string(param) : absl::StrCat(param, "[", i, "]")});
      }
    }
    return texts;
  }
  static std::vector<std::pair<size_t, size_t>> PairsOf(const SimilarityScoreRequest& request) {
    const size_t firsts = request.text_1.size();
    std::vector<std::pair<size_t, size_t>> pairs;
    for (size_t i = 0; i < request.text_2.size(); ++i) pairs.emplace_back(firsts == 1 ? 0 : i, firsts + i);
    return pairs;
  }
};

}  // namespace

void HandleRerank(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/rerank",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(RerankRequest parsed, ParseRerankRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<RerankCall>(context, std::move(ticket), std::move(parsed), std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start("documents"));
                    return call;
                  });
}

void HandleSimilarityScore(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                           const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/score",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(SimilarityScoreRequest parsed, ParseSimilarityScoreRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<ScoreCall>(context, std::move(ticket), parsed, std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start("text_2"));
                    return call;
                  });
}

}  // namespace arach::server::http
