#include "engine/runner/device_weights.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

namespace {

// int8 matrices: the codes ([rows, cols]), then at the next 64-byte boundary one float scale per row ([rows]).
size_t ScalesOffset(size_t codes_bytes) { return (codes_bytes + 63) / 64 * 64; }

// Bytes a [rows, cols] tensor takes in `dtype` (UploadTensor's layout).
size_t MatrixBytes(DType dtype, int64_t rows, int64_t cols) {
  const size_t codes_bytes = static_cast<size_t>(rows * cols) * DTypeSize(dtype);
  return dtype == DType::kI8 ? ScalesOffset(codes_bytes) + static_cast<size_t>(rows) * sizeof(float) : codes_bytes;
}

// Uploads `tensor` into a buffer that `owner` keeps; adds its size to `bytes`. `matrix`: a 2-D tensor stored in the
// weight dtype even with one row.
absl::StatusOr<DeviceMatrix> UploadTensor(Backend& backend, HostTensor&& tensor, bool matrix,
                                          std::vector<std::unique_ptr<DeviceBuffer>>& owner, size_t& bytes_held) {
  if (tensor.empty()) return DeviceMatrix{};
  // Matrices (2-D, more than one row: projections, embeddings, LM head, adapter) in the backend's weight dtype;
  // vectors (norms, biases, the hub's input row) in its activation dtype.
  matrix = tensor.shape.size() == 2 && (tensor.shape[0] > 1 || matrix);
  const DType dtype = matrix ? backend.weight_dtype() : backend.activation_dtype();
  const size_t count = tensor.data.size();
  const int64_t rows = tensor.shape.size() == 2 ? tensor.shape[0] : 1;
  const int64_t cols = tensor.shape.size() == 2 ? tensor.shape[1] : tensor.shape[0];
  const size_t codes_bytes = count * DTypeSize(dtype);
  const size_t scales_offset = ScalesOffset(codes_bytes);
  const size_t bytes = MatrixBytes(dtype, rows, cols);
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> buffer, backend.Allocate(bytes));
  DeviceMatrix view = DeviceMatrix::Dense(buffer->data(), dtype, rows, cols);
  if (dtype == DType::kI8) {
    std::vector<int8_t> codes(count);
    std::vector<float> scales(static_cast<size_t>(rows));
    QuantizeRowsInt8(tensor.data.data(), rows, cols, codes.data(), scales.data());
    char* base = static_cast<char*>(buffer->data());
    backend.CopyToDevice(base, codes.data(), codes_bytes);
    backend.CopyToDevice(base + scales_offset, scales.data(), scales.size() * sizeof(float));
    view.row_scales = reinterpret_cast<const float*>(base + scales_offset);
  } else {
    backend.UploadFloat(buffer->data(), dtype, tensor.data.data(), count);
  }
  bytes_held += buffer->size();
  owner.push_back(std::move(buffer));
  tensor = HostTensor{};  // free the host copy now
  return view;
}

}  // namespace

absl::StatusOr<DeviceMatrix> DeviceWeights::Put(Backend& backend, HostTensor&& tensor, bool matrix) {
  return UploadTensor(backend, std::move(tensor), matrix, buffers_, total_bytes);
}

absl::StatusOr<DeviceLoraAdapter> UploadLora(Backend& backend, LoraAdapter&& lora) {
  DeviceLoraAdapter device;
  device.name = lora.name;
  for (LoraLayer& layer : lora.layers) {
    std::array<DeviceLoraProjection, kLoraSites>& sites = device.layers.emplace_back();
    for (int s = 0; s < kLoraSites; ++s) {
      ARACH_ASSIGN_OR_RETURN(sites[s].a, UploadTensor(backend, std::move(layer.sites[s].a), /*matrix=*/true, device.buffers, device.bytes));
      ARACH_ASSIGN_OR_RETURN(sites[s].b, UploadTensor(backend, std::move(layer.sites[s].b), /*matrix=*/true, device.buffers, device.bytes));
    }
  }
  return device;
}

size_t LoraBytesBound(const Backend& backend, const ModelConfig& config, int rank) {
  size_t per_layer = 0;
  for (const LoraSiteShape& s : LoraSiteShapesBound(config, rank)) {
    if (s.rank == 0) continue;
    per_layer += MatrixBytes(backend.weight_dtype(), s.rank, s.in) + MatrixBytes(backend.weight_dtype(), s.out, s.rank);
  }
  return per_layer * static_cast<size_t>(config.num_layers);
}

size_t LoraBytes(const Backend& backend, const LoraAdapter& adapter) {
  size_t bytes = 0;
  for (const LoraLayer& layer : adapter.layers) {
    for (const LoraProjection& p : layer.sites) {
      if (p.empty()) continue;
      bytes += MatrixBytes(backend.weight_dtype(), p.a.rows(), p.a.cols()) + MatrixBytes(backend.weight_dtype(), p.b.rows(), p.b.cols());
    }
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<DeviceWeights>> DeviceWeights::Upload(Backend& backend, ModelWeights&& host,
                                                                     FeatureWeights&& features) {
  std::unique_ptr<DeviceWeights> w(new DeviceWeights());
  const int64_t d = host.token_embedding.cols();
  if (static_cast<int64_t>(features.hub_embedding.size()) != d) {
    return absl::InvalidArgumentError(absl::StrCat("hub embedding has ", features.hub_embedding.size(),
                                                   " values, the model's hidden size is ", d));
  }
  HostTensor hub_input{features.hub_embedding, {1, d}};
  if (!host.position_embedding.empty()) {  // hub tokens sit at position 0
    for (int64_t c = 0; c < d; ++c) hub_input.data[c] += host.position_embedding.data[c];
  }
  ARACH_ASSIGN_OR_RETURN(w->hub_input, w->Put(backend, std::move(hub_input)));
  if (features.adapter) {
    w->adapter_expansion = features.adapter->expansion;
    for (AdapterLayer& layer : features.adapter->layers) {
      DeviceAdapterLayer& a = w->adapter.emplace_back();
      ARACH_ASSIGN_OR_RETURN(a.up, w->Put(backend, std::move(layer.up)));
      ARACH_ASSIGN_OR_RETURN(a.down, w->Put(backend, std::move(layer.down)));
      ARACH_ASSIGN_OR_RETURN(a.skip, w->Put(backend, std::move(layer.skip)));
    }
  }
  for (LoraAdapter& lora : features.loras) {
    ARACH_ASSIGN_OR_RETURN(DeviceLoraAdapter device, UploadLora(backend, std::move(lora)));
    w->loras.push_back(std::move(device));
  }
  ARACH_ASSIGN_OR_RETURN(w->token_embedding, w->Put(backend, std::move(host.token_embedding)));
  ARACH_ASSIGN_OR_RETURN(w->position_embedding, w->Put(backend, std::move(host.position_embedding)));
  for (LayerWeights& l : host.layers) {
    DeviceLayerWeights& d = w->layers.emplace_back();
    ARACH_ASSIGN_OR_RETURN(d.norm1_weight, w->Put(backend, std::move(l.norm1_weight)));
    ARACH_ASSIGN_OR_RETURN(d.norm1_bias, w->Put(backend, std::move(l.norm1_bias)));
    ARACH_ASSIGN_OR_RETURN(d.qkv_weight, w->Put(backend, std::move(l.qkv_weight)));
    ARACH_ASSIGN_OR_RETURN(d.qkv_bias, w->Put(backend, std::move(l.qkv_bias)));
    ARACH_ASSIGN_OR_RETURN(d.q_norm_weight, w->Put(backend, std::move(l.q_norm_weight)));
    ARACH_ASSIGN_OR_RETURN(d.k_norm_weight, w->Put(backend, std::move(l.k_norm_weight)));
    ARACH_ASSIGN_OR_RETURN(d.out_weight, w->Put(backend, std::move(l.out_weight)));
    ARACH_ASSIGN_OR_RETURN(d.out_bias, w->Put(backend, std::move(l.out_bias)));
    ARACH_ASSIGN_OR_RETURN(d.norm2_weight, w->Put(backend, std::move(l.norm2_weight)));
    ARACH_ASSIGN_OR_RETURN(d.norm2_bias, w->Put(backend, std::move(l.norm2_bias)));
    ARACH_ASSIGN_OR_RETURN(d.mlp_in_weight, w->Put(backend, std::move(l.mlp_in_weight)));
    ARACH_ASSIGN_OR_RETURN(d.mlp_in_bias, w->Put(backend, std::move(l.mlp_in_bias)));
    ARACH_ASSIGN_OR_RETURN(d.mlp_out_weight, w->Put(backend, std::move(l.mlp_out_weight)));
    ARACH_ASSIGN_OR_RETURN(d.mlp_out_bias, w->Put(backend, std::move(l.mlp_out_bias)));
  }
  ARACH_ASSIGN_OR_RETURN(w->final_norm_weight, w->Put(backend, std::move(host.final_norm_weight)));
  ARACH_ASSIGN_OR_RETURN(w->final_norm_bias, w->Put(backend, std::move(host.final_norm_bias)));
  ARACH_ASSIGN_OR_RETURN(w->lm_head, w->Put(backend, std::move(host.lm_head)));
  if (w->lm_head.data == nullptr) w->lm_head = w->token_embedding;
  return w;
}

}  // namespace arach
