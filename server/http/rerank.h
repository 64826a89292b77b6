// POST /rerank, /v1/rerank, /v2/rerank: vLLM's rerank API (Jina's and Cohere's shape) on the embedding model: the
// query and each document are embedded as /v1/embeddings embeds an input (one engine request each, pooled as the
// model's folder says, under the request's variant), and a document's relevance is the cosine similarity of its
// embedding to the query's (as vLLM scores with an embedding model). The results come best first.
#pragma once

#include <httplib.h>

#include <span>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleRerank(ServiceContext& context, const httplib::Request& request, httplib::Response& response, const ClientConnection& client);

// The cosine similarity of two embeddings of one length (0 where either is all zeros), accumulated in double.
double CosineSimilarity(std::span<const float> a, std::span<const float> b);

}  // namespace arach::server::http
