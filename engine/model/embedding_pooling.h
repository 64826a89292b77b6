// How a model folder's embeddings are pooled from its hidden states. A Sentence-Transformers folder says so in
// modules.json (the modules an encode runs, in order) and its Pooling module's config.json; without modules.json
// the last token's hidden state is the embedding (as vLLM pools a decoder-only model served for embeddings). A
// folder whose modules would make embeddings this engine does not compute (a Dense projection, max pooling, an
// instruction left out of the mean) is refused at load time, naming the file and what it asks for: never a
// silently different vector.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace arach {

enum class PoolingMode {
  kLastToken,  // the last prompt token's hidden state after the final norm (the row the LM head reads)
  kMean,       // the mean over every prompt token's hidden state after the final norm
  kFirstToken, // the first prompt token's (Sentence-Transformers' "cls" mode)
};

struct EmbeddingPooling {
  PoolingMode mode = PoolingMode::kLastToken;
  // Where the mode came from: "default (no modules.json)" or the Pooling module's config file.
  std::string source = "default (no modules.json)";
};

// "last_token", "mean" or "first_token".
const char* PoolingModeName(PoolingMode mode);

// Reads `dir`/modules.json and the Pooling module's config.json when modules.json exists. Accepted modules:
// Transformer (the model itself), one Pooling (cls, mean or last-token, include_prompt true, its
// word_embedding_dimension the model's `hidden_size`), Normalize (embeddings are unit length unless a request asks
// otherwise: the API's `normalize`, true by default). INVALID_ARGUMENT naming the file and the module or field for
// anything else.
absl::StatusOr<EmbeddingPooling> LoadEmbeddingPooling(const std::string& dir, int hidden_size);

}  // namespace arach
