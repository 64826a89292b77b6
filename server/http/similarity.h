// The similarity routes. On an embedding model each text is embedded as /v1/embeddings embeds a text input (one
// engine request each, pooled as the model's folder says, under the request's variant) and a pair of texts scores the
// cosine similarity of their embeddings (as vLLM scores with an embedding model). On a cross-encoder
// (--classifier_from_token: Engine::classifier_token_ids) each pair is one engine request, its two texts' tokens one
// after the other, scored by ClassifierScore of the class tokens' logits at its last position (as vLLM scores with
// Qwen3-Reranker's classifier_from_token).
//  - POST /rerank, /v1/rerank, /v2/rerank (vLLM's rerank API, Jina's and Cohere's shape): the documents ranked by
//    their similarity to the query, best first.
//  - POST /score, /v1/score (vLLM's score API): text_1 against each text_2, or pairwise.
#pragma once

#include <httplib.h>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleRerank(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const ClientConnection& client);
void HandleSimilarityScore(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                           const ClientConnection& client);

}  // namespace arach::server::http
