// POST /v1/embeddings: OpenAI's embeddings API on the engine's embedding requests (RequestKind::kEmbed): each
// input's hidden states after the final norm pooled as the model's folder says (engine/model/embedding_config.h:
// the last token's by default, as vLLM pools a decoder-only model served for embeddings, e.g. Qwen3-Embedding), its
// first `dimensions` kept and normalized to unit length, under the request's variant (ARACH changes the hidden
// states too). One engine request per input, answered whole.
#pragma once

#include <httplib.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/http/client_connection.h"
#include "server/http/completion_request.h"
#include "server/request_limits.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleEmbeddings(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                      const ClientConnection& client);

// The engine request that embeds `input` under `variant`: its text as the model's folder wants it tokenized
// (EmbeddingInputText), or its ids; kept to its last `truncate_prompt_tokens` tokens when given. INVALID_ARGUMENT
// naming `field` ("input[2]", "documents[0]").
absl::StatusOr<EngineRequest> EmbeddingEngineRequest(const Engine& engine, const RequestLimits& limits, const PromptInput& input,
                                                     std::optional<int> truncate_prompt_tokens, const Variant& variant,
                                                     const std::string& field);

// The token ids of an input of a prompt-only route: its text tokenized as a prompt (EncodeTextPrompt), or its ids
// within the API's limits; kept to their last `truncate_prompt_tokens` (TruncatePrompt, against `max_tokens`).
// INVALID_ARGUMENT naming `field`.
absl::StatusOr<std::vector<int32_t>> InputPromptIds(const Engine& engine, const RequestLimits& limits, const PromptInput& input,
                                                    std::optional<int> truncate_prompt_tokens, int max_tokens,
                                                    const std::string& field);

// encoding_format "base64": the values as little-endian float32 bytes, in base64 (as OpenAI's clients decode them).
std::string Base64OfFloats(std::span<const float> values);

}  // namespace arach::server::http
