// Host (float32) weights in the engine's canonical layout, whatever checkpoint family they came from:
// - every projection is [out, in] row-major (nn.Linear layout), so y = x W^T;
// - the fused QKV projection's rows are [q heads..., k heads..., v heads...], each head head_dim rows;
// - a gated MLP's input projection is fused as [gate rows; up rows].
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"

namespace arach {

struct HostTensor {
  std::vector<float> data;
  std::vector<int64_t> shape;  // empty when the tensor is absent (e.g. a bias the model does not have)

  bool empty() const { return data.empty(); }
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

struct LayerWeights {
  HostTensor norm1_weight;    // (d)
  HostTensor norm1_bias;      // (d), LayerNorm only
  HostTensor qkv_weight;      // (qkv_size, d)
  HostTensor qkv_bias;        // (qkv_size) or absent
  HostTensor q_norm_weight;   // (head_dim), qk_norm only
  HostTensor k_norm_weight;   // (head_dim), qk_norm only
  HostTensor out_weight;      // (d, q_size)
  HostTensor out_bias;        // (d) or absent
  HostTensor norm2_weight;    // (d)
  HostTensor norm2_bias;      // (d), LayerNorm only
  HostTensor mlp_in_weight;   // (I, d), or (2I, d) = [gate; up] for a gated MLP
  HostTensor mlp_in_bias;     // (I) / (2I) or absent
  HostTensor mlp_out_weight;  // (d, I)
  HostTensor mlp_out_bias;    // (d) or absent
};

struct ModelWeights {
  HostTensor token_embedding;     // (V, d)
  HostTensor position_embedding;  // (max_positions, d), GPT-2 only
  std::vector<LayerWeights> layers;
  HostTensor final_norm_weight;   // (d)
  HostTensor final_norm_bias;     // (d), LayerNorm only
  HostTensor lm_head;             // (V, d); absent when tied to token_embedding

  const HostTensor& output_projection() const { return lm_head.empty() ? token_embedding : lm_head; }
};

// Reads the weights of `config`'s architecture from `checkpoint`, mapping the family's tensor names
// (GPT-2 with or without `transformer.`, GPT-2 Conv1D [in, out], NeoX head-interleaved QKV, Llama GQA)
// to the canonical layout. A missing tensor or a wrong shape is an error naming the file and tensor.
absl::StatusOr<ModelWeights> LoadModelWeights(const Checkpoint& checkpoint, const ModelConfig& config);

}  // namespace arach
