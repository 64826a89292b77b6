// GPT-NeoX / Pythia tensor names: `gpt_neox.embed_in.weight`, `gpt_neox.layers.{i}.input_layernorm`,
// `.attention.query_key_value`, `.attention.dense`, `.post_attention_layernorm`, `.mlp.dense_h_to_4h`,
// `.mlp.dense_4h_to_h`, `gpt_neox.final_layer_norm`, `embed_out.weight` (absent when tied).
// The fused QKV output is head-interleaved, [q(hd) k(hd) v(hd)] per head; it is regrouped here into
// the canonical [all q; all k; all v].
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/weight_reader.h"

namespace arach {

absl::StatusOr<ModelWeights> LoadGptNeoxWeights(const WeightReader& reader, const ModelConfig& c) {
  const int64_t d = c.hidden_size, inner = c.intermediate_size, vocab = c.vocab_size;
  ModelWeights w;
  ARACH_ASSIGN_OR_RETURN(w.token_embedding, reader.Read("gpt_neox.embed_in.weight", {vocab, d}));
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("gpt_neox.layers.", i, ".");
    LayerWeights& l = w.layers.emplace_back();
    ARACH_ASSIGN_OR_RETURN(l.norm1_weight, reader.Read(p + "input_layernorm.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(l.norm1_bias, reader.Read(p + "input_layernorm.bias", {d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor qkv, reader.Read(p + "attention.query_key_value.weight", {3 * d, d}));
    l.qkv_weight = DeinterleaveQkv(qkv, c.num_heads, c.head_dim);
    if (c.qkv_bias) {
      ARACH_ASSIGN_OR_RETURN(HostTensor bias, reader.Read(p + "attention.query_key_value.bias", {3 * d}));
      l.qkv_bias = DeinterleaveQkv(bias, c.num_heads, c.head_dim);
    }
    ARACH_ASSIGN_OR_RETURN(l.out_weight, reader.Read(p + "attention.dense.weight", {d, d}));
    if (c.attn_out_bias) {
      ARACH_ASSIGN_OR_RETURN(l.out_bias, reader.Read(p + "attention.dense.bias", {d}));
    }
    ARACH_ASSIGN_OR_RETURN(l.norm2_weight, reader.Read(p + "post_attention_layernorm.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(l.norm2_bias, reader.Read(p + "post_attention_layernorm.bias", {d}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_in_weight, reader.Read(p + "mlp.dense_h_to_4h.weight", {inner, d}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_in_bias, reader.Read(p + "mlp.dense_h_to_4h.bias", {inner}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_out_weight, reader.Read(p + "mlp.dense_4h_to_h.weight", {d, inner}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_out_bias, reader.Read(p + "mlp.dense_4h_to_h.bias", {d}));
  }
  ARACH_ASSIGN_OR_RETURN(w.final_norm_weight, reader.Read("gpt_neox.final_layer_norm.weight", {d}));
  ARACH_ASSIGN_OR_RETURN(w.final_norm_bias, reader.Read("gpt_neox.final_layer_norm.bias", {d}));
  if (!c.tie_word_embeddings) {
    ARACH_ASSIGN_OR_RETURN(w.lm_head, reader.Read("embed_out.weight", {vocab, d}));
  }
  return w;
}

}  // namespace arach
