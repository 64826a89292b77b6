// How a model folder's embeddings are made from its hidden states. A Sentence-Transformers folder says so in
// modules.json (the modules an encode runs, in order), its Pooling module's config.json (which rows are pooled) and
// its Transformer module's sentence_bert_config.json (how long an input may be, whether text is lower-cased first);
// without modules.json the last token's hidden state is the embedding, over the model's whole context (as vLLM
// pools a decoder-only model served for embeddings). A folder whose modules would make embeddings this engine does
// not compute (a Dense projection, max pooling, an instruction left out of the mean) is refused at load time,
// naming the file and what it asks for: never a silently different vector.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace arach {

enum class PoolingMode {
  kLastToken,  // the last prompt token's hidden state after the final norm (the row the LM head reads)
  kMean,       // the mean over every prompt token's hidden state after the final norm
  kFirstToken, // the first prompt token's (Sentence-Transformers' "cls" mode)
};

struct EmbeddingConfig {
  PoolingMode pooling = PoolingMode::kLastToken;
  // Where the pooling came from: "default (no modules.json)" or the Pooling module's config file.
  std::string pooling_source = "default (no modules.json)";
  // sentence_bert_config.json's max_seq_length: the most tokens an input to embed may have (Sentence-Transformers
  // truncates to it; vLLM makes it the model's length and refuses longer inputs, as this engine does for
  // embeddings); nullopt: the model's context.
  std::optional<int> max_tokens;
  // sentence_bert_config.json's do_lower_case: a text input is lower-cased (Python's str.lower) before it is
  // tokenized, as Sentence-Transformers does. Token-id inputs are embedded as given.
  bool lowercase = false;
  // The sentence_bert_config.json read, or "" when the folder has none.
  std::string input_source;
  // config_sentence_transformers.json's prompt named by its default_prompt_name: Sentence-Transformers puts it before
  // every text it encodes without a prompt of its own (e.g. an instruction); "" when none is named. Token-id inputs
  // are embedded as given.
  std::string default_prompt;
};

// "last_token", "mean" or "first_token".
const char* PoolingModeName(PoolingMode mode);

// Reads `dir`/modules.json and, when it exists, the Pooling module's config.json, the Transformer module's
// sentence_bert_config.json (optional) and config_sentence_transformers.json (optional: its prompts and
// default_prompt_name, which must name one of them when it is not null). Accepted modules: Transformer (the model itself: max_seq_length a positive
// integer or null, do_lower_case true or false), one Pooling (cls, mean or last-token, include_prompt true, its
// word_embedding_dimension the model's `hidden_size`), Normalize (embeddings are unit length unless a request asks
// otherwise: the API's `normalize`, true by default). INVALID_ARGUMENT naming the file and the module or field for
// anything else.
absl::StatusOr<EmbeddingConfig> LoadEmbeddingConfig(const std::string& dir, int hidden_size);

}  // namespace arach
