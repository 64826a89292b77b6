#include "server/http/embeddings.h"

#include <bit>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/embedding_answer.h"
#include "server/http/embedding_request.h"
#include "server/http/generation_call.h"
#include "server/http/http_call.h"
#include "server/request_limits.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

class EmbeddingCall : public GenerationCall {
 public:
  EmbeddingCall(ServiceContext& context, CallTicket ticket, EmbeddingRequest request, ResolvedVariant variant, const CallOrigin& origin)
      : GenerationCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/embeddings", "embd-", origin.answer_deadline}),
        request_(std::move(request)) {}

  // Tokenizes the inputs and submits one embedding request each.
  absl::Status Start();

 protected:
  std::string ObjectName() const override { return "list"; }
  json ChoiceJson(int /*index*/, Choice& /*choice*/, bool /*final*/) override { return json::object(); }  // (WholeAnswer's own)
  json WholeAnswer() override;

 private:
  EmbeddingRequest request_;
};

absl::Status EmbeddingCall::Start() {
  Engine& e = engine();
  const size_t inputs = request_.inputs.size();
  ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(e, inputs, "input", request_.dimensions));
  std::vector<EngineRequest> requests;
  std::vector<std::string> input_fields;
  for (size_t i = 0; i < inputs; ++i) {
    const std::string field = inputs == 1 ? "input" : absl::StrCat("input[", i, "]");
    ARACH_ASSIGN_OR_RETURN(EngineRequest r, EmbeddingEngineRequest(e, limits(), request_.inputs[i], fields().truncate_prompt_tokens,
                                                                   variant(), field));
    requests.push_back(std::move(r));
    input_fields.push_back(field);
  }
  return Submit(std::move(requests), input_fields);
}

json EmbeddingCall::WholeAnswer() {
  json data = json::array();
  int prompt_tokens = 0;
  for (size_t i = 0; i < choices().size(); ++i) {
    const FinishInfo& info = *choices()[i].finish;  // (every choice has answered: RespondWhole)
    if (info.embedding.empty()) {
      Fail(absl::InternalError(absl::StrCat("input ", i, ": the engine returned no hidden state")));
      return json();
    }
    const std::vector<float> embedding = AnsweredEmbedding(info.embedding, request_.dimensions, request_.normalize);
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", request_.base64 ? json(Base64OfFloats(embedding)) : json(embedding)}});
    prompt_tokens += info.usage.prompt_tokens;
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", fields().model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
          {"arach_variant", variant_name()}};
}

}  // namespace

absl::StatusOr<EngineRequest> EmbeddingEngineRequest(const Engine& engine, const RequestLimits& limits, const PromptInput& input,
                                                     std::optional<int> truncate_prompt_tokens, const Variant& variant,
                                                     const std::string& field) {
  EngineRequest r;
  r.kind = RequestKind::kEmbed;
  PromptInput embedded = input;
  if (input.text) embedded.text = EmbeddingInputText(engine, *input.text);
  ARACH_ASSIGN_OR_RETURN(r.prompt, InputPromptIds(engine, limits, embedded, truncate_prompt_tokens, engine.max_embedding_tokens(), field));
  r.variant = variant;
  return r;
}

absl::StatusOr<std::vector<int32_t>> InputPromptIds(const Engine& engine, const RequestLimits& limits, const PromptInput& input,
                                                    std::optional<int> truncate_prompt_tokens, int max_tokens,
                                                    const std::string& field) {
  std::vector<int32_t> ids;
  if (input.text) {
    ARACH_ASSIGN_OR_RETURN(ids, EncodeTextPrompt(engine, limits, field, *input.text));
  } else {
    ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits, field, input.ids.size()));
    ids = input.ids;
  }
  ARACH_RETURN_IF_ERROR(TruncatePrompt(truncate_prompt_tokens, max_tokens, ids).status());
  return ids;
}

std::string Base64OfFloats(std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "float32 bytes are written as the host holds them");
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

void HandleEmbeddings(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                      const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/embeddings",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(EmbeddingRequest parsed, ParseEmbeddingRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<EmbeddingCall>(context, std::move(ticket), std::move(parsed), std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
