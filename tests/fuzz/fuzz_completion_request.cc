// libFuzzer: arbitrary bytes as the body of POST /v1/completions, /v1/embeddings, /v1/rerank, /v1/score, /v1/classify
// and the LoRA routes reach the HTTP API's readers (ParseCompletionRequest, ParseEmbeddingRequest, ParseRerankRequest,
// ParseSimilarityScoreRequest, ParseClassifyRequest, which share the prompt and field readers, and
// ParseLoraAdminRequest): every outcome
// is a request or an INVALID_ARGUMENT naming a parameter, and the error renders as OpenAI's error body; never a
// crash or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http/completion_request.h"
#include "server/http/embedding_request.h"
#include "server/http/lora_admin.h"
#include "server/http/similarity_request.h"
#include "server/http/openai_error.h"

namespace {

// A refusal must be INVALID_ARGUMENT naming a parameter, and render.
void CheckRefusal(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) std::abort();
  if (arach::server::http::ErrorParam(status).empty()) std::abort();  // every refusal names a parameter
  (void)arach::server::http::JsonText(arach::server::http::ErrorBody(status));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<arach::server::http::CompletionRequest> request = arach::server::http::ParseCompletionRequest(body);
  if (!request.ok()) {
    CheckRefusal(request.status());
  } else if (request->prompts.empty() || request->fields.n < 1) {
    std::abort();
  }
  const absl::StatusOr<arach::server::http::EmbeddingRequest> embedding = arach::server::http::ParseEmbeddingRequest(body);
  if (!embedding.ok()) {
    CheckRefusal(embedding.status());
  } else if (embedding->inputs.empty() || (embedding->dimensions && *embedding->dimensions < 1)) {
    std::abort();
  }
  const absl::StatusOr<arach::server::http::ClassifyRequest> classify = arach::server::http::ParseClassifyRequest(body);
  if (!classify.ok()) {
    CheckRefusal(classify.status());
  } else if (classify->inputs.empty()) {
    std::abort();
  }
  const absl::StatusOr<arach::server::http::RerankRequest> rerank = arach::server::http::ParseRerankRequest(body);
  if (!rerank.ok()) {
    CheckRefusal(rerank.status());
  } else if (rerank->documents.empty() || (rerank->top_n && *rerank->top_n < 0)) {
    std::abort();
  }
  const absl::StatusOr<arach::server::http::SimilarityScoreRequest> score = arach::server::http::ParseSimilarityScoreRequest(body);
  if (!score.ok()) {
    CheckRefusal(score.status());
  } else if (score->text_1.empty() || score->text_2.empty() || (score->text_1.size() > 1 && score->text_1.size() != score->text_2.size())) {
    std::abort();
  }
  for (const bool load : {true, false}) {
    const absl::StatusOr<arach::server::LoraAdminRequest> lora = arach::server::http::ParseLoraAdminRequest(body, load);
    if (!lora.ok()) {
      CheckRefusal(lora.status());
      continue;
    }
    const absl::Status checked = arach::server::CheckLoraAdminRequest(*lora, load, "served");
    if (!checked.ok()) {
      CheckRefusal(checked);
    } else if (lora->lora_name.empty() || lora->lora_name.find_first_of(":,") != std::string::npos || lora->lora_name == "served" ||
               (load && lora->lora_path.empty())) {
      std::abort();
    }
  }
  return 0;
}
