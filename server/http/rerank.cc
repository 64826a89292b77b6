#include "server/http/rerank.h"

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
#include "server/http/rerank_request.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

class RerankCall : public GenerationCall {
 public:
  RerankCall(ServiceContext& context, CallTicket ticket, RerankRequest request, ResolvedVariant variant, const CallOrigin& origin)
      : GenerationCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/rerank", "rerank-", origin.answer_deadline}),
        request_(std::move(request)) {}

  // Tokenizes the query and the documents and submits one embedding request each (the query first).
  absl::Status Start();

 protected:
  std::string ObjectName() const override { return "rerank"; }
  json ChoiceJson(int /*index*/, Choice& /*choice*/, bool /*final*/) override { return json::object(); }  // (WholeAnswer's own)
  json WholeAnswer() override;

 private:
  RerankRequest request_;
};

absl::Status RerankCall::Start() {
  Engine& e = engine();
  ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(e, 1 + request_.documents.size(), "documents", std::nullopt));
  std::vector<EngineRequest> requests;
  std::vector<std::string> text_fields;
  const auto add = [&](const std::string& text, const std::string& field) -> absl::Status {
    PromptInput input;
    input.text = text;
    ARACH_ASSIGN_OR_RETURN(EngineRequest r, EmbeddingEngineRequest(e, limits(), input, fields().truncate_prompt_tokens, variant(), field));
    requests.push_back(std::move(r));
    text_fields.push_back(field);
    return absl::OkStatus();
  };
  ARACH_RETURN_IF_ERROR(add(request_.query, "query"));
  for (size_t i = 0; i < request_.documents.size(); ++i) {
    ARACH_RETURN_IF_ERROR(add(request_.documents[i], absl::StrCat("documents[", i, "]")));
  }
  return Submit(std::move(requests), text_fields);
}

json RerankCall::WholeAnswer() {
  int tokens = 0;
  for (size_t c = 0; c < choices().size(); ++c) {
    const FinishInfo& info = *choices()[c].finish;  // (every choice has answered: RespondWhole)
    if (info.embedding.empty()) {
      Fail(absl::InternalError(absl::StrCat(c == 0 ? "query" : absl::StrCat("documents[", c - 1, "]"), ": the engine returned no hidden state")));
      return json();
    }
    tokens += info.usage.prompt_tokens;
  }
  const std::vector<float>& query = choices()[0].finish->embedding;
  const size_t num_documents = request_.documents.size();
  std::vector<double> scores(num_documents);
  for (size_t i = 0; i < num_documents; ++i) scores[i] = CosineSimilarity(query, choices()[i + 1].finish->embedding);
  std::vector<size_t> order(num_documents);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  const size_t kept = request_.top_n && *request_.top_n > 0 ? std::min(num_documents, static_cast<size_t>(*request_.top_n)) : num_documents;
  json results = json::array();
  for (size_t k = 0; k < kept; ++k) {
    const size_t i = order[k];
    json result = {{"index", i}, {"relevance_score", scores[i]}};
    if (request_.return_documents) result["document"] = {{"text", request_.documents[i]}};
    results.push_back(std::move(result));
  }
  json body = Envelope(json::array());
  body.erase("choices");
  body.erase("object");
  body["results"] = std::move(results);
  body["usage"] = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
  return body;
}

}  // namespace

double CosineSimilarity(std::span<const float> a, std::span<const float> b) {
  double dot = 0, norm_a = 0, norm_b = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    dot += static_cast<double>(a[k]) * b[k];
    norm_a += static_cast<double>(a[k]) * a[k];
    norm_b += static_cast<double>(b[k]) * b[k];
  }
  return norm_a > 0 && norm_b > 0 ? dot / std::sqrt(norm_a * norm_b) : 0.0;
}

void HandleRerank(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/rerank",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(RerankRequest parsed, ParseRerankRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<RerankCall>(context, std::move(ticket), std::move(parsed), std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
