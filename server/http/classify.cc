#include "server/http/classify.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/embedding_answer.h"
#include "server/http/embedding_request.h"
#include "server/http/embeddings.h"
#include "server/http/generation_call.h"
#include "server/http/http_call.h"
#include "server/request_limits.h"
#include "server/similarity_scores.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

class ClassifyCall : public GenerationCall {
 public:
  ClassifyCall(ServiceContext& context, CallTicket ticket, ClassifyRequest request, ResolvedVariant variant, const CallOrigin& origin)
      : GenerationCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/classify", "classify-", origin.answer_deadline}),
        request_(std::move(request)) {}

  // Tokenizes the inputs and submits one request to classify each.
  absl::Status Start() {
    Engine& e = engine();
    if (e.classifier_token_ids().empty()) {
      return InvalidField("model", "the served model is no classifier (a server serves one with --classifier_from_token)");
    }
    const size_t inputs = request_.inputs.size();
    ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(e, inputs, "input", std::nullopt));
    std::vector<EngineRequest> requests;
    std::vector<std::string> input_fields;
    for (size_t i = 0; i < inputs; ++i) {
      const std::string field = inputs == 1 ? "input" : absl::StrCat("input[", i, "]");
      EngineRequest& r = requests.emplace_back();
      r.kind = RequestKind::kClassify;
      r.class_token_ids = e.classifier_token_ids();
      ARACH_ASSIGN_OR_RETURN(r.prompt, InputPromptIds(e, limits(), request_.inputs[i], fields().truncate_prompt_tokens,
                                                      e.model_config().max_positions, field));
      r.variant = variant();
      input_fields.push_back(field);
    }
    return Submit(std::move(requests), input_fields);
  }

 protected:
  std::string ObjectName() const override { return "list"; }
  json ChoiceJson(int /*index*/, Choice& /*choice*/, bool /*final*/) override { return json::object(); }  // (WholeAnswer's own)

  json WholeAnswer() override {
    const std::vector<int32_t>& classes = engine().classifier_token_ids();
    json data = json::array();
    int prompt_tokens = 0;
    for (size_t i = 0; i < choices().size(); ++i) {
      const FinishInfo& info = *choices()[i].finish;  // (every choice has answered: RespondWhole)
      if (info.class_logits.size() != classes.size()) {
        Fail(absl::InternalError(absl::StrCat("input ", i, ": the engine returned no class logits")));
        return json();
      }
      const std::vector<double> probs = ClassProbabilities(info.class_logits);
      // One class: its token is the label where it is more likely than not.
      const size_t best = classes.size() == 1 ? 0 : static_cast<size_t>(std::max_element(probs.begin(), probs.end()) - probs.begin());
      const json label = classes.size() > 1 || probs[0] >= 0.5 ? json(engine().tokenizer().IdToToken(classes[best]).value_or(""))
                                                             : json(nullptr);
      data.push_back({{"index", i}, {"label", label}, {"probs", probs}, {"num_classes", probs.size()}});
      prompt_tokens += info.usage.prompt_tokens;
    }
    json body = Envelope(json::array());
    body.erase("choices");
    body["data"] = std::move(data);
    body["usage"] = {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}};
    return body;
  }

 private:
  ClassifyRequest request_;
};

}  // namespace

void HandleClassify(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                    const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/classify",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(ClassifyRequest parsed, ParseClassifyRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<ClassifyCall>(context, std::move(ticket), std::move(parsed), std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
