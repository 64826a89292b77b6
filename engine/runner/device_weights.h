// The model's weights in device memory (the backend's weight dtype), as DeviceMatrix views, plus the
// feature weights: the ARACH hub input row, the pre-projection + skip adapter and the LoRA adapters.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/model/adapter.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/model_weights.h"

namespace arach {

struct DeviceLayerWeights {
  DeviceMatrix norm1_weight, norm1_bias;      // [1, d]
  DeviceMatrix qkv_weight, qkv_bias;          // [qkv_size, d], [1, qkv_size]
  DeviceMatrix q_norm_weight, k_norm_weight;  // [1, head_dim] each (qk_norm only)
  DeviceMatrix out_weight, out_bias;          // [d, q_size], [1, d]
  DeviceMatrix norm2_weight, norm2_bias;      // [1, d]
  DeviceMatrix mlp_in_weight, mlp_in_bias;    // [I or 2I, d], [1, I or 2I]
  DeviceMatrix mlp_out_weight, mlp_out_bias;  // [d, I], [1, d]
};

struct DeviceAdapterLayer {
  DeviceMatrix up;    // [E, d]
  DeviceMatrix down;  // [d, E]
  DeviceMatrix skip;  // [d, d]
};

// One LoRA adapter's matrices (LoraProjection), per layer and LoraSite; empty views where it leaves a projection.
struct DeviceLoraProjection {
  DeviceMatrix a;  // [R, in]
  DeviceMatrix b;  // [out, R], scale folded in
};
struct DeviceLoraAdapter {
  std::string name;  // (empty, like layers, at an index that holds no adapter)
  std::vector<std::array<DeviceLoraProjection, kLoraSites>> layers;  // [num_layers]
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;  // its own memory, freed when it is unloaded
  size_t bytes = 0;
};

// Uploads `adapter` (freeing each host tensor once copied) into memory of its own.
absl::StatusOr<DeviceLoraAdapter> UploadLora(Backend& backend, LoraAdapter&& adapter);
// The most device memory UploadLora takes for an adapter of `config` whose modules have r <= `rank`
// (LoraSiteShapesBound in the backend's weight dtype).
size_t LoraBytesBound(const Backend& backend, const ModelConfig& config, int rank);
// The device memory UploadLora takes for `adapter`.
size_t LoraBytes(const Backend& backend, const LoraAdapter& adapter);

// Weights of the model variants beside the base model.
struct FeatureWeights {
  std::vector<float> hub_embedding;       // [d] ARACH hub embedding
  std::optional<AdapterWeights> adapter;  // pre-projection + skip, when loaded
  std::vector<LoraAdapter> loras;         // LoRA adapters requests may name (SequenceInput::lora = index + 1)
};

class DeviceWeights {
 public:
  // Uploads `host` and `features` (freeing each host tensor once copied). Absent tensors become empty views.
  static absl::StatusOr<std::unique_ptr<DeviceWeights>> Upload(Backend& backend, ModelWeights&& host,
                                                               FeatureWeights&& features);

  DeviceMatrix token_embedding;     // [V, d]
  DeviceMatrix position_embedding;  // [max_positions, d] or empty
  std::vector<DeviceLayerWeights> layers;
  DeviceMatrix final_norm_weight, final_norm_bias;  // [1, d]
  DeviceMatrix lm_head;             // [V, d] (the token embedding when tied)
  DeviceMatrix hub_input;           // [1, d]: hub embedding (+ the position-0 embedding for learned positions)
  std::vector<DeviceAdapterLayer> adapter;  // [num_layers], empty without an adapter
  int adapter_expansion = 0;        // E
  std::vector<DeviceLoraAdapter> loras;  // FeatureWeights::loras, in order, then those loaded at run time
  size_t total_bytes = 0;           // the model's and the adapter's (LoRA adapters count their own)

 private:
  DeviceWeights() = default;
  // `matrix`: a 2-D tensor stored in the weight dtype even with one row (a LoRA A of rank 1).
  absl::StatusOr<DeviceMatrix> Put(Backend& backend, HostTensor&& tensor, bool matrix = false);
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

}  // namespace arach
