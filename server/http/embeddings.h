// POST /v1/embeddings: OpenAI's embeddings API on the engine's embedding requests (RequestKind::kEmbed): each
// input's hidden states after the final norm pooled as the model's folder says (engine/model/embedding_config.h:
// the last token's by default, as vLLM pools a decoder-only model served for embeddings, e.g. Qwen3-Embedding), its
// first `dimensions` kept and normalized to unit length, under the request's variant (ARACH changes the hidden
// states too). One engine request per input, answered whole.
#pragma once

#include <httplib.h>

#include <span>
#include <string>
#include <vector>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleEmbeddings(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                      const ClientConnection& client);

// encoding_format "base64": the values as little-endian float32 bytes, in base64 (as OpenAI's clients decode them).
std::string Base64OfFloats(std::span<const float> values);

}  // namespace arach::server::http
