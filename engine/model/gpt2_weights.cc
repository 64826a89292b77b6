// GPT-2 tensor names: `[transformer.]wte.weight`, `wpe.weight`, `h.{i}.ln_1`, `h.{i}.attn.c_attn`,
// `h.{i}.attn.c_proj`, `h.{i}.ln_2`, `h.{i}.mlp.c_fc`, `h.{i}.mlp.c_proj`, `ln_f`, optional `lm_head.weight`.
// Conv1D weights are stored [in, out] and transposed here; c_attn's output columns are already [q | k | v].
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/weight_reader.h"

namespace arach {

absl::StatusOr<ModelWeights> LoadGpt2Weights(const WeightReader& reader, const ModelConfig& c) {
  const std::string prefix = reader.Has("transformer.wte.weight") ? "transformer." : "";
  const int64_t d = c.hidden_size, inner = c.intermediate_size, vocab = c.vocab_size;
  ModelWeights w;
  ARACH_ASSIGN_OR_RETURN(w.token_embedding, reader.Read(prefix + "wte.weight", {vocab, d}));
  ARACH_ASSIGN_OR_RETURN(w.position_embedding, reader.Read(prefix + "wpe.weight", {c.max_positions, d}));
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat(prefix, "h.", i, ".");
    LayerWeights& l = w.layers.emplace_back();
    ARACH_ASSIGN_OR_RETURN(l.norm1_weight, reader.Read(p + "ln_1.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(l.norm1_bias, reader.Read(p + "ln_1.bias", {d}));
    ARACH_ASSIGN_OR_RETURN(l.qkv_weight, reader.ReadTransposed(p + "attn.c_attn.weight", d, 3 * d));
    ARACH_ASSIGN_OR_RETURN(l.qkv_bias, reader.Read(p + "attn.c_attn.bias", {3 * d}));
    ARACH_ASSIGN_OR_RETURN(l.out_weight, reader.ReadTransposed(p + "attn.c_proj.weight", d, d));
    ARACH_ASSIGN_OR_RETURN(l.out_bias, reader.Read(p + "attn.c_proj.bias", {d}));
    ARACH_ASSIGN_OR_RETURN(l.norm2_weight, reader.Read(p + "ln_2.weight", {d}));
    ARACH_ASSIGN_OR_RETURN(l.norm2_bias, reader.Read(p + "ln_2.bias", {d}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_in_weight, reader.ReadTransposed(p + "mlp.c_fc.weight", d, inner));
    ARACH_ASSIGN_OR_RETURN(l.mlp_in_bias, reader.Read(p + "mlp.c_fc.bias", {inner}));
    ARACH_ASSIGN_OR_RETURN(l.mlp_out_weight, reader.ReadTransposed(p + "mlp.c_proj.weight", inner, d));
    ARACH_ASSIGN_OR_RETURN(l.mlp_out_bias, reader.Read(p + "mlp.c_proj.bias", {d}));
  }
  ARACH_ASSIGN_OR_RETURN(w.final_norm_weight, reader.Read(prefix + "ln_f.weight", {d}));
  ARACH_ASSIGN_OR_RETURN(w.final_norm_bias, reader.Read(prefix + "ln_f.bias", {d}));
  if (!c.tie_word_embeddings) {
    ARACH_ASSIGN_OR_RETURN(w.lm_head, reader.Read("lm_head.weight", {vocab, d}));
  }
  return w;
}

}  // namespace arach
