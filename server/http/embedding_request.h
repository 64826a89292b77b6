// The bodies of the routes that take a list of inputs, read field by field: an OpenAI embeddings request (POST
// /v1/embeddings) and vLLM's classify request (POST /v1/classify). Every error is INVALID_ARGUMENT "<param>: <what>"
// naming the parameter. The inputs' lengths and the dimensions' range are checked against the served model later
// (embeddings.h, classify.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/completion_request.h"

namespace arach::server::http {

struct EmbeddingRequest {
  // model, the variant fields, user / experiment_key, priority, cache_salt, truncate_prompt_tokens (the rest of a
  // generation's fields keep their defaults: they are not parameters of this route).
  GenerationFields fields;
  std::vector<PromptInput> inputs;  // `input`: a string, token ids, or a list of either: one embedding each
  bool base64 = false;              // encoding_format "base64": little-endian float32 bytes in base64, else "float"
  std::optional<int64_t> dimensions;  // keep the first this many dimensions (then normalize), at least 1
  bool normalize = true;            // vLLM's: to unit length (L2)
};

// Parses an embeddings body; parameters the route does not know are refused (request_fields.h).
absl::StatusOr<EmbeddingRequest> ParseEmbeddingRequest(const std::string& body);

struct ClassifyRequest {
  // model, the variant fields, user / experiment_key, priority, cache_salt, truncate_prompt_tokens
  GenerationFields fields;
  std::vector<PromptInput> inputs;  // `input`: a string, token ids, or a list of either: one classification each
};

// Parses a classify body; parameters the route does not know are refused (request_fields.h).
absl::StatusOr<ClassifyRequest> ParseClassifyRequest(const std::string& body);

}  // namespace arach::server::http
