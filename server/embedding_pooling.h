// What both APIs do to an engine embedding (FinishInfo::embedding, the prompt's last hidden state) before they
// answer it: HTTP /v1/embeddings and gRPC Embed.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace arach::server {

// Inputs of one embeddings request at most (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

// An input's embedding from its hidden state: the first `dimensions` values (all without), divided by their L2
// norm when `normalize` (a zero vector stays zero).
std::vector<float> PoolEmbedding(std::span<const float> hidden, std::optional<int> dimensions, bool normalize);

}  // namespace arach::server
