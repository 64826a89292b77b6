// The bodies of the embedding-similarity routes, read field by field: every error is INVALID_ARGUMENT
// "<param>: <what>" naming the parameter. The texts' count and lengths are checked against the served model later
// (similarity.h). Rerank: POST /rerank, /v1/rerank, /v2/rerank (vLLM's, Jina's and Cohere's API shape); score:
// POST /score, /v1/score (vLLM's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/completion_request.h"

namespace arach::server::http {

struct RerankRequest {
  // model, the variant fields, experiment_key, priority, cache_salt, truncate_prompt_tokens (the rest of a
  // generation's fields keep their defaults: they are not parameters of this route).
  GenerationFields fields;
  std::string query;
  std::vector<std::string> documents;  // each a string, or an object {"text": string}
  std::optional<int> top_n;            // the best this many (absent or 0: every document)
  bool return_documents = true;        // each result carries its document's text
};

// Parses a rerank body; parameters the route does not know are refused (request_fields.h).
absl::StatusOr<RerankRequest> ParseRerankRequest(const std::string& body);

struct SimilarityScoreRequest {
  GenerationFields fields;  // as RerankRequest's
  // text_1 and text_2: each a string or a non-empty list of strings; one text_1 is scored against every text_2,
  // else text_1[i] against text_2[i] (as many of each).
  std::vector<std::string> text_1, text_2;
};

// Parses a score body; parameters the route does not know are refused (request_fields.h).
absl::StatusOr<SimilarityScoreRequest> ParseSimilarityScoreRequest(const std::string& body);

}  // namespace arach::server::http
