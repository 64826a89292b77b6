// Quantized checkpoints: how config.json's "quantization_config" says the weights are stored, and reading a
// quantized weight back as float32 (it then becomes the backend's weight dtype like any other weight).
//
// Supported: FP8 e4m3 weights with float32/bf16 scales, in the two layouts users publish:
//   - Hugging Face "fp8" (fine-grained FP8; DeepSeek-V3, Qwen3-*-FP8): `quant_method: "fp8"`, optional
//     `weight_block_size: [R, C]`; beside each F8_E4M3 `<name>` a `<name>_scale_inv` of shape
//     [ceil(rows / R), ceil(cols / C)] (one element without a block size). Despite its name it multiplies:
//     w[r][c] = fp8[r][c] * scale_inv[r / R][c / C].
//   - compressed-tensors "float-quantized" (llm-compressor's FP8 models): `quant_method: "compressed-tensors"`,
//     `format: "float-quantized"`, config_groups whose weights are {type: float, num_bits: 8, symmetric} with
//     strategy "tensor" (one scale), "channel" ([rows, 1]), "group" ([rows, cols / group_size]) or "block"
//     (block_structure [R, C]); beside each F8_E4M3 `<name>` a `<name>_scale`: w = fp8 * scale.
//     Activation quantization (input_scale) is not applied: activations stay float32 on this engine.
// Anything else (gptq, awq, bitsandbytes, int or packed formats, e5m2) is refused when config.json is read,
// naming the method. Tensors that are not F8_E4M3 in a quantized checkpoint (norms, embeddings, the ignored
// lm_head) are read as they are stored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/checkpoint.h"
#include "nlohmann/json_fwd.hpp"

namespace arach {

struct WeightQuantization {
  enum class Method {
    kNone,                    // plain float weights
    kFp8,                     // Hugging Face "fp8": <name>_scale_inv
    kCompressedTensorsFloat,  // compressed-tensors "float-quantized": <name>_scale
  };
  enum class Granularity {
    kTensor,   // one scale per tensor
    kChannel,  // one scale per output row
    kBlock,    // one scale per [block_rows, block_cols] tile (a group of G columns is a [1, G] block)
  };
  Method method = Method::kNone;
  Granularity granularity = Granularity::kTensor;
  int64_t block_rows = 0;  // kBlock only
  int64_t block_cols = 0;

  bool quantized() const { return method != Method::kNone; }
  // The scale tensor beside a quantized weight `name`.
  std::string ScaleName(const std::string& name) const;
  // For messages and the start line: "FP8 e4m3, Hugging Face fp8, 128x128 blocks".
  std::string Describe() const;
};

// Parses config.json's "quantization_config" object. `source` names config.json in errors; each error names
// the field ("quantization_config.quant_method", ...) and what is supported.
absl::StatusOr<WeightQuantization> ParseWeightQuantization(const nlohmann::json& config, const std::string& source);

// Reads weight `name` as float32 with its stored shape equal to `expected_shape` (when non-empty): an F8_E4M3
// tensor is dequantized with its scale tensor per `quantization`; any other dtype is read as Checkpoint::ReadFloat
// does. Errors name the file and the tensor: an FP8 tensor in a checkpoint without quantization_config, a
// missing scale, a scale whose shape does not fit the weight.
absl::StatusOr<std::vector<float>> ReadWeightFloat(const Checkpoint& checkpoint, const std::string& name,
                                                   const std::vector<int64_t>& expected_shape,
                                                   const WeightQuantization& quantization);

}  // namespace arach
