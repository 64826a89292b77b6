// What both APIs do to an engine embedding (FinishInfo::embedding, the prompt's pooled hidden states) before they
// answer it: HTTP /v1/embeddings and gRPC Embed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/engine.h"

namespace arach::server {

// Inputs of one embeddings request at most (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

// The checks of an embeddings request against the served `engine`, both APIs alike: INVALID_ARGUMENT naming
// `inputs_field` when there are no inputs or more than one request may have (kMaxEmbeddingInputs, and no more than the
// engine's queue holds: each input is an engine request, a call of more could never be admitted whole, and a 429
// would send its client retrying forever); naming `dimensions` when they exceed the model's hidden size.
absl::Status CheckEmbeddingRequest(const Engine& engine, size_t inputs, const std::string& inputs_field, std::optional<int64_t> dimensions);

// A text input to embed as the model's folder wants it tokenized, as Sentence-Transformers encodes it: after the
// default prompt of its config_sentence_transformers.json (if it names one), then lower-cased (Python's str.lower)
// when its sentence_bert_config.json says do_lower_case.
std::string EmbeddingInputText(const Engine& engine, std::string text);

// An input's embedding as answered from the engine's (FinishInfo::embedding): the first `dimensions` values (all
// without), divided by their L2 norm when `normalize` (a zero vector stays zero).
std::vector<float> AnsweredEmbedding(std::span<const float> hidden, std::optional<int64_t> dimensions, bool normalize);

}  // namespace arach::server
