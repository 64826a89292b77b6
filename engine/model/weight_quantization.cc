#include "engine/model/weight_quantization.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

absl::Status FieldError(const std::string& source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field \"quantization_config.", field, "\" ", what));
}

// The string at `object[key]`, or "" when absent or null.
absl::StatusOr<std::string> OptionalString(const json& object, const char* key, const std::string& source,
                                           const std::string& field) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return FieldError(source, field, "must be a string");
  return it->get<std::string>();
}

// [R, C] of positive integers.
absl::StatusOr<std::pair<int64_t, int64_t>> BlockShape(const json& value, const std::string& source, const std::string& field) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer() ||
      value[0].get<int64_t>() <= 0 || value[1].get<int64_t>() <= 0) {
    return FieldError(source, field, "must be two positive integers [rows, cols]");
  }
  return std::pair{value[0].get<int64_t>(), value[1].get<int64_t>()};
}

absl::StatusOr<WeightQuantization> ParseHuggingFaceFp8(const json& config, const std::string& source) {
  WeightQuantization q;
  q.method = WeightQuantization::Method::kFp8;
  ARACH_ASSIGN_OR_RETURN(std::string fmt, OptionalString(config, "fmt", source, "fmt"));
  if (!fmt.empty() && fmt != "e4m3") return FieldError(source, "fmt", absl::StrCat("\"", fmt, "\" is not supported (e4m3)"));
  const auto block = config.find("weight_block_size");
  if (block == config.end() || block->is_null()) return q;  // one scale per tensor
  ARACH_ASSIGN_OR_RETURN(auto shape, BlockShape(*block, source, "weight_block_size"));
  q.granularity = WeightQuantization::Granularity::kBlock;
  q.block_rows = shape.first;
  q.block_cols = shape.second;
  return q;
}

// One config group's "weights" scheme.
absl::StatusOr<WeightQuantization> ParseCompressedTensorsWeights(const json& weights, const std::string& source,
                                                                 const std::string& field) {
  if (!weights.is_object()) return FieldError(source, field, "must be an object");
  WeightQuantization q;
  q.method = WeightQuantization::Method::kCompressedTensorsFloat;
  ARACH_ASSIGN_OR_RETURN(std::string type, OptionalString(weights, "type", source, field + ".type"));
  const auto bits = weights.find("num_bits");
  if (type != "float" || bits == weights.end() || !bits->is_number_integer() || bits->get<int>() != 8) {
    return FieldError(source, field, absl::StrCat("quantizes weights as ", type.empty() ? "?" : type, " with ",
                                                  bits != weights.end() ? bits->dump() : "?",
                                                  " bits; only 8-bit float (FP8 e4m3) weights are supported"));
  }
  const auto symmetric = weights.find("symmetric");
  if (symmetric != weights.end() && symmetric->is_boolean() && !symmetric->get<bool>()) {
    return FieldError(source, field + ".symmetric", "false (zero points) is not supported for float weights");
  }
  ARACH_ASSIGN_OR_RETURN(std::string strategy, OptionalString(weights, "strategy", source, field + ".strategy"));
  if (strategy == "tensor") {
    q.granularity = WeightQuantization::Granularity::kTensor;
  } else if (strategy == "channel") {
    q.granularity = WeightQuantization::Granularity::kChannel;
  } else if (strategy == "group") {
    const auto group = weights.find("group_size");
    if (group == weights.end() || !group->is_number_integer() || group->get<int64_t>() <= 0) {
      return FieldError(source, field + ".group_size", "must be a positive integer for strategy \"group\"");
    }
    q.granularity = WeightQuantization::Granularity::kBlock;
    q.block_rows = 1;
    q.block_cols = group->get<int64_t>();
  } else if (strategy == "block") {
    const auto block = weights.find("block_structure");
    if (block == weights.end()) return FieldError(source, field + ".block_structure", "is missing for strategy \"block\"");
    ARACH_ASSIGN_OR_RETURN(auto shape, BlockShape(*block, source, field + ".block_structure"));
    q.granularity = WeightQuantization::Granularity::kBlock;
    q.block_rows = shape.first;
    q.block_cols = shape.second;
  } else {
    return FieldError(source, field + ".strategy",
                      absl::StrCat("\"", strategy, "\" is not supported (tensor, channel, group, block)"));
  }
  return q;
}

absl::StatusOr<WeightQuantization> ParseCompressedTensors(const json& config, const std::string& source) {
  ARACH_ASSIGN_OR_RETURN(std::string format, OptionalString(config, "format", source, "format"));
  if (format != "float-quantized") {
    return FieldError(source, "format", absl::StrCat("\"", format,
                                                     "\" is not supported (compressed-tensors: float-quantized FP8 only)"));
  }
  const auto groups = config.find("config_groups");
  if (groups == config.end() || !groups->is_object() || groups->empty()) {
    return FieldError(source, "config_groups", "must be an object with at least one group");
  }
  std::optional<WeightQuantization> scheme;
  for (const auto& [name, group] : groups->items()) {
    const std::string field = absl::StrCat("config_groups.", name, ".weights");
    if (!group.is_object() || !group.contains("weights")) return FieldError(source, field, "is missing");
    ARACH_ASSIGN_OR_RETURN(WeightQuantization q, ParseCompressedTensorsWeights(group["weights"], source, field));
    if (scheme && (scheme->granularity != q.granularity || scheme->block_rows != q.block_rows ||
                   scheme->block_cols != q.block_cols)) {
      return FieldError(source, field, "differs from another group's weights; groups with different schemes are not supported");
    }
    scheme = q;
  }
  return *scheme;
}

}  // namespace

std::string WeightQuantization::ScaleName(const std::string& name) const {
  return name + (method == Method::kFp8 ? "_scale_inv" : "_scale");
}

std::string WeightQuantization::Describe() const {
  if (method == Method::kNone) return "none";
  std::string text = method == Method::kFp8 ? "FP8 e4m3 (Hugging Face fp8" : "FP8 e4m3 (compressed-tensors float-quantized";
  switch (granularity) {
    case Granularity::kTensor: return text + ", one scale per tensor)";
    case Granularity::kChannel: return text + ", one scale per output row)";
    case Granularity::kBlock: return absl::StrCat(text, ", ", block_rows, "x", block_cols, " blocks)");
  }
  return text + ")";
}

absl::StatusOr<WeightQuantization> ParseWeightQuantization(const json& config, const std::string& source) {
  if (!config.is_object()) return absl::InvalidArgumentError(absl::StrCat(source, ": field \"quantization_config\" must be an object"));
  ARACH_ASSIGN_OR_RETURN(std::string method, OptionalString(config, "quant_method", source, "quant_method"));
  if (method == "fp8") return ParseHuggingFaceFp8(config, source);
  if (method == "compressed-tensors") return ParseCompressedTensors(config, source);
  return FieldError(source, "quant_method",
                    absl::StrCat("\"", method, "\" is not supported (fp8, compressed-tensors with float-quantized FP8)"));
}

absl::StatusOr<std::vector<float>> ReadWeightFloat(const Checkpoint& checkpoint, const std::string& name,
                                                   const std::vector<int64_t>& expected_shape,
                                                   const WeightQuantization& quantization) {
  ARACH_ASSIGN_OR_RETURN(const TensorInfo* weight, checkpoint.Find(name));
  if (weight->dtype != DType::kF8E4M3) return checkpoint.ReadFloat(name, expected_shape);
  const std::string file = checkpoint.FileOf(name);
  if (!quantization.quantized()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor \"", name,
                                                   "\" is F8_E4M3 but config.json has no quantization_config saying how it is scaled"));
  }
  if (!expected_shape.empty() && weight->shape != expected_shape) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor \"", name, "\" has shape ", weight->ShapeString(),
                                                   ", expected ", ShapeToString(expected_shape)));
  }
  if (weight->shape.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor \"", name, "\" is F8_E4M3 with shape ",
                                                   weight->ShapeString(), "; quantized weights must be matrices"));
  }
  const int64_t rows = weight->shape[0], cols = weight->shape[1];
  // Scale blocks: [block_rows, block_cols] tiles, a grid of [grid_rows, grid_cols].
  int64_t block_rows = rows, block_cols = cols;
  if (quantization.granularity == WeightQuantization::Granularity::kChannel) block_rows = 1;
  if (quantization.granularity == WeightQuantization::Granularity::kBlock) {
    block_rows = quantization.block_rows;
    block_cols = quantization.block_cols;
  }
  const int64_t grid_rows = (rows + block_rows - 1) / block_rows, grid_cols = (cols + block_cols - 1) / block_cols;
  const std::string scale_name = quantization.ScaleName(name);
  if (!checkpoint.Has(scale_name)) {
    return absl::NotFoundError(absl::StrCat(file, ": tensor \"", name, "\" is F8_E4M3 but its scale \"", scale_name,
                                            "\" is missing (", quantization.Describe(), ")"));
  }
  ARACH_ASSIGN_OR_RETURN(const TensorInfo* scale_info, checkpoint.Find(scale_name));
  // The grid as stored: [grid_rows, grid_cols]; one scale may be [] or [1]; a column of them [grid_rows].
  const std::vector<int64_t>& stored = scale_info->shape;
  const bool fits = stored == std::vector<int64_t>{grid_rows, grid_cols} ||
                    (grid_cols == 1 && stored == std::vector<int64_t>{grid_rows}) ||
                    (grid_rows * grid_cols == 1 && stored.empty());
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(checkpoint.FileOf(scale_name), ": tensor \"", scale_name, "\" has shape ",
                                                   scale_info->ShapeString(), ", expected ",
                                                   ShapeToString({grid_rows, grid_cols}), " for ", name, " ",
                                                   weight->ShapeString(), " (", quantization.Describe(), ")"));
  }
  ARACH_ASSIGN_OR_RETURN(std::vector<float> scales, checkpoint.ReadFloat(scale_name));
  std::vector<float> out(static_cast<size_t>(rows * cols));  // [rows, cols]
  for (int64_t r = 0; r < rows; ++r) {
    const float* scale_row = scales.data() + (r / block_rows) * grid_cols;
    const uint8_t* in = weight->data + r * cols;
    float* o = out.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c) o[c] = Float8E4M3ToFloat(in[c]) * scale_row[c / block_cols];
  }
  return out;
}

}  // namespace arach
