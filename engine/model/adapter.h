// The pre-projection + content skip adapter, loaded from safetensors with the method's reference names:
//   <qkv-module>.preproj.up_proj.weight    [E, d]
//   <qkv-module>.preproj.down_proj.weight  [d, E]
//   <qkv-module>.preproj.skip_proj.weight  [d, d]
// with <qkv-module> = transformer.h.{i}.attn.c_attn (GPT-2, `transformer.` optional),
// gpt_neox.layers.{i}.attention.query_key_value (GPT-NeoX) or model.layers.{i}.self_attn (Llama).
// Per layer, with x^ the layer's input norm of x:
//   x~ = x^ + down(SiLU(up(x^)))     Q, K, V are computed from x~
//   skip = skip_proj(x~)            added to the residual beside the attention output
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace arach {

struct AdapterLayer {
  HostTensor up;    // [E, d]
  HostTensor down;  // [d, E]
  HostTensor skip;  // [d, d]
};

struct AdapterWeights {
  std::string source;  // file it came from
  int expansion = 0;   // E, read from the shapes
  std::vector<AdapterLayer> layers;
};

// Loads and checks an adapter for `config`: every layer present, shapes fitting the model, the same E in
// every layer, no tensor for a layer the model lacks. Errors name the file and tensor.
absl::StatusOr<AdapterWeights> LoadAdapter(const std::string& path, const ModelConfig& config);

}  // namespace arach
