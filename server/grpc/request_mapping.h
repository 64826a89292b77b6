// Protobuf <-> engine: turns API requests into engine requests and engine results into API messages.
// The engine validates requests (engine/request.h); this file only enforces the API's own size limits
// (request_limits.h) and names fields the way the proto does (GrpcFieldNames).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"
#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "engine/output/token_text.h"
#include "server/request_limits.h"
#include "server/variant_resolver.h"

namespace arach::server {

// The id of a request: the client's `request_id` as given when it is usable (IsUsableRequestId: it is written
// into the request log line), a fresh one when empty; INVALID_ARGUMENT naming `request_id` otherwise.
absl::StatusOr<std::string> ChosenRequestId(const std::string& request_id);

// The variant fields of a request (VariantSpec and its experiment key).
RequestedVariant ToRequestedVariant(const arach::v1::VariantSpec& spec, const std::string& experiment_key);
// The proto description of a served variant.
void FillServedVariant(const ResolvedVariant& resolved, arach::v1::ServedVariant* out);

// The proto path of an engine field: "temperature" -> "sampling.temperature", "arach_offset" ->
// "variant.arach_offset", "prompt" -> `prompt_field` (e.g. "prompt.token_ids", "inputs[2].text").
std::string GrpcFieldName(absl::string_view engine_field, const std::string& prompt_field);

// A prompt given as text (tokenized, BOS per the tokenizer's convention) or as ids. `field` names the
// prompt ("prompt" or "inputs[2]"); `*prompt_field` is set to the path of the branch given.
absl::StatusOr<std::vector<int32_t>> PromptIds(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                               bool has_text, const std::string& text, bool has_ids,
                                               const arach::v1::TokenIds& ids, std::string* prompt_field);

// The engine request for `request` under `variant` (not yet validated: Engine::Submit does that with
// GrpcFieldName). `*prompt_field` receives the proto path of the prompt.
absl::StatusOr<EngineRequest> ToEngineRequest(const Engine& engine, const RequestLimits& limits,
                                              const arach::v1::GenerateRequest& request, const Variant& variant,
                                              std::string* prompt_field);

// The constraint a StructuredOutput asks for (kind none when unset).
absl::StatusOr<OutputConstraint> ToOutputConstraint(const arach::v1::StructuredOutput& structured_output);

// The conversation of a Chat request (JSON fields parsed; errors name the proto field, e.g.
// "messages[1].tool_calls_json").
absl::StatusOr<ChatInput> ToChatInput(const arach::v1::ChatRequest& request);

// The stream message for `chunk`: token ids and text; with `logprobs` (not null; it advances past the
// chunk's tokens) also each token's log-prob, text and bytes.
arach::v1::GenerateResponse ToResponse(const StreamChunk& chunk, PieceDecoder* logprobs);
// The final message's `finish`.
void FillFinish(const FinishInfo& info, const ResolvedVariant& variant, const std::string& request_id,
                arach::v1::Finish* out);
// The attention diagnostics of a request, one LayerAttention per layer.
void FillAttentionDiagnostics(const AttentionDiagnostics& attention, arach::v1::AttentionDiagnostics* out);

}  // namespace arach::server
