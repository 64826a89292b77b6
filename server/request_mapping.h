// Protobuf <-> engine: turns API requests into engine requests (validating with the API's field names)
// and engine results into API messages.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"
#include "engine/engine.h"
#include "server/request_limits.h"
#include "server/variant_resolver.h"

namespace arach::server {

// Token ids of a prompt given as text (tokenized, BOS per the tokenizer's convention) or as ids
// (checked against the vocabulary). `field` names the prompt in errors, e.g. "prompt" or "inputs[2]".
absl::StatusOr<std::vector<int32_t>> PromptIds(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                               bool has_text, const std::string& text, bool has_ids,
                                               const arach::v1::TokenIds& ids);

// A validated engine request for `request` under `variant`.
absl::StatusOr<GenerateRequest> ToEngineRequest(const Engine& engine, const RequestLimits& limits,
                                                const arach::v1::GenerateRequest& request, const Variant& variant);

// The stream message for `chunk` (token ids, text, log-probs when asked).
arach::v1::GenerateResponse ToResponse(const StreamChunk& chunk, bool with_logprobs);
// The final message's `finish`.
void FillFinish(const FinishInfo& info, const ResolvedVariant& variant, const std::string& request_id,
                arach::v1::Finish* out);

}  // namespace arach::server
