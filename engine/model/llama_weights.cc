// Llama tensor names (Hugging Face layout, q/k rows already permuted for rotate-half RoPE), shared by
// Mistral, Qwen2 and Qwen3: `model.embed_tokens.weight`, `model.layers.{i}.input_layernorm.weight`,
// `.self_attn.{q,k,v,o}_proj` (Qwen2: q/k/v biases), `.self_attn.{q,k}_norm.weight` (Qwen3, [head_dim]),
// `.post_attention_layernorm.weight`, `.mlp.{gate,up,down}_proj`, `model.norm.weight`, `lm_head.weight`
// (absent when tied). K and V have num_key_value_heads heads (grouped-query attention); q_proj has
// num_attention_heads x head_dim rows, where head_dim may differ from hidden_size / heads.
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/weight_reader.h"

namespace arach {

absl::StatusOr<ModelWeights> LoadLlamaWeights(const WeightReader& reader, const ModelConfig& c) {
  const int64_t d = c.hidden_size, inner = c.intermediate_size, vocab = c.vocab_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  ModelWeights w;
  ARACH_ASSIGN_OR_RETURN(w.token_embedding, reader.Read("model.embed_tokens.weight", {vocab, d}));
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    LayerWeights& l = w.layers.emplace_back();
    ARACH_ASSIGN_OR_RETURN(l.norm1_weight, reader.Read(p + "input_layernorm.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor wq, reader.Read(p + "self_attn.q_proj.weight", {q, d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor wk, reader.Read(p + "self_attn.k_proj.weight", {kv, d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor wv, reader.Read(p + "self_attn.v_proj.weight", {kv, d}));
    l.qkv_weight = ConcatRows({&wq, &wk, &wv});
    if (c.qkv_bias) {
      ARACH_ASSIGN_OR_RETURN(HostTensor bq, reader.Read(p + "self_attn.q_proj.bias", {q}));
      ARACH_ASSIGN_OR_RETURN(HostTensor bk, reader.Read(p + "self_attn.k_proj.bias", {kv}));
      ARACH_ASSIGN_OR_RETURN(HostTensor bv, reader.Read(p + "self_attn.v_proj.bias", {kv}));
      l.qkv_bias = ConcatRows({&bq, &bk, &bv});
    }
    if (c.qk_norm) {
      ARACH_ASSIGN_OR_RETURN(l.q_norm_weight, reader.Read(p + "self_attn.q_norm.weight", {c.head_dim}));
      ARACH_ASSIGN_OR_RETURN(l.k_norm_weight, reader.Read(p + "self_attn.k_norm.weight", {c.head_dim}));
    }
    ARACH_ASSIGN_OR_RETURN(l.out_weight, reader.Read(p + "self_attn.o_proj.weight", {d, q}));
    if (c.attn_out_bias) {
      ARACH_ASSIGN_OR_RETURN(l.out_bias, reader.Read(p + "self_attn.o_proj.bias", {d}));
    }
    ARACH_ASSIGN_OR_RETURN(l.norm2_weight, reader.Read(p + "post_attention_layernorm.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor gate, reader.Read(p + "mlp.gate_proj.weight", {inner, d}));
    ARACH_ASSIGN_OR_RETURN(HostTensor up, reader.Read(p + "mlp.up_proj.weight", {inner, d}));
    l.mlp_in_weight = ConcatRows({&gate, &up});
    ARACH_ASSIGN_OR_RETURN(l.mlp_out_weight, reader.Read(p + "mlp.down_proj.weight", {d, inner}));
    if (c.mlp_bias) {
      ARACH_ASSIGN_OR_RETURN(HostTensor bg, reader.Read(p + "mlp.gate_proj.bias", {inner}));
      ARACH_ASSIGN_OR_RETURN(HostTensor bu, reader.Read(p + "mlp.up_proj.bias", {inner}));
      l.mlp_in_bias = ConcatRows({&bg, &bu});
      ARACH_ASSIGN_OR_RETURN(l.mlp_out_bias, reader.Read(p + "mlp.down_proj.bias", {d}));
    }
  }
  ARACH_ASSIGN_OR_RETURN(w.final_norm_weight, reader.Read("model.norm.weight", {d}));
  if (!c.tie_word_embeddings) {
    ARACH_ASSIGN_OR_RETURN(w.lm_head, reader.Read("lm_head.weight", {vocab, d}));
  }
  return w;
}

}  // namespace arach
