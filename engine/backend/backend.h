// The device interface: memory and the kernels one transformer forward needs. The forward itself
// (engine/runner) is written once against this interface; each device implements the ops
// (engine/backend/cpu with OpenBLAS, engine/backend/cuda with cuBLASLt and own kernels).
//
// Pointers named "device" point into memory from Allocate(); metadata arrays (token ids, positions,
// block tables) are copied there with CopyToDevice before the ops that read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "engine/backend/attention_params.h"
#include "engine/backend/device_matrix.h"
#include "engine/model/model_config.h"

namespace arach {

enum class DeviceKind { kCpu, kCuda };
absl::string_view DeviceKindName(DeviceKind kind);
absl::StatusOr<DeviceKind> ParseDeviceKind(absl::string_view name);  // "cpu" | "cuda"

// Owned device memory; freed by the backend that allocated it.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string Describe() const = 0;   // e.g. "cpu (OpenBLAS, 2 threads)"
  virtual DType activation_dtype() const = 0;  // dtype of activations and of the KV cache

  // ---- memory
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) = 0;
  virtual void CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void Fill(void* device_dst, size_t bytes, unsigned char value) = 0;
  // Converts `count` float32 host values to `dtype` in device memory.
  virtual void UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) = 0;
  // Converts a device matrix to float32 on the host (rows * cols values).
  virtual void DownloadFloat(float* host_dst, const DeviceMatrix& src) = 0;
  // Memory the device could still give (CPU: MemAvailable of the host).
  virtual absl::StatusOr<size_t> FreeMemoryBytes() = 0;
  // Waits for queued work; reports asynchronous device errors.
  virtual absl::Status Synchronize() = 0;

  // ---- ops (all shapes in rows x cols; `out` may not alias inputs unless stated)
  // out[i] = table[ids[i]] (+ position_table[positions[i]] when position_table.data != null).
  // ids, positions: [out.rows] device.
  virtual void Embed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
                     const DeviceMatrix& position_table, const DeviceMatrix& out) = 0;
  // out = LayerNorm(in) * weight + bias; weight, bias: [1, cols].
  virtual void LayerNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                         float eps, const DeviceMatrix& out) = 0;
  // out = in / rms(in) * weight.
  virtual void RmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) = 0;
  // out = in W^T + bias (+ out when accumulate). in: [M, K], weight: [N, K], bias: [1, N] or empty, out: [M, N].
  virtual void Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                      const DeviceMatrix& out, bool accumulate) = 0;
  // Rotates, in place, the first rotary_dim dims of every head of `x` ([rows, heads * head_dim]) by
  // positions[row] * inv_freq (rotate-half convention). positions: [rows] device; inv_freq: [rotary_dim/2] device.
  virtual void Rope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                    const float* inv_freq) = 0;
  // x = act(x) in place.
  virtual void Activate(Activation act, const DeviceMatrix& x) = 0;
  // out = act(in[:, :I]) * in[:, I:], in: [M, 2I], out: [M, I].
  virtual void GatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) = 0;
  // x += y.
  virtual void Add(const DeviceMatrix& x, const DeviceMatrix& y) = 0;
  // Writes k[i], v[i] ([rows, kv_heads * head_dim]) into the cache slot slots[i] (block * block_size + offset).
  virtual void WriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) = 0;
  virtual void Attention(const AttentionParams& params) = 0;
  // dst[i] = src[rows[i]], rows: [dst.rows] device.
  virtual void GatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) = 0;
  // dst[rows[i]] = src[i] (accumulate: +=), rows: [src.rows] device, distinct.
  virtual void ScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) = 0;
  // Every row of out = row ([1, out.cols]).
  virtual void FillRows(const DeviceMatrix& row, const DeviceMatrix& out) = 0;
};

// Creates the backend for `kind`; CUDA fails with FAILED_PRECONDITION where it was not built or no GPU is present.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(DeviceKind kind);

}  // namespace arach
