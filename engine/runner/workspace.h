// Device scratch memory of the forward, grown on demand and reused across steps.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"

namespace arach {

// Named scratch areas; each is an independent buffer.
enum class Scratch : int {
  kHidden,        // [rows, d] residual stream
  kNormed,        // [rows, d] norm1 output (and norm2 output of sequential blocks)
  kNormed2,       // [rows, d] norm2 output of parallel-residual blocks
  kQkv,           // [rows, qkv_size]
  kAttention,     // [rows, q_size]
  kMlpIn,         // [rows, I] or [rows, 2I]
  kMlpAct,        // [rows, I] (gated MLP)
  kLogitHidden,   // [logit rows, d]
  kLogitNormed,   // [logit rows, d]
  kLogits,        // [logit rows, V]
  kStepMetadata,  // the step's int32 / float32 arrays (UploadTogether)
  kAdapterX,       // [skip rows, d]: x^ then x~
  kAdapterInner,   // [skip rows, E]
  kAdapterSkip,    // [skip rows, d]
  kAttentionMass,  // float [L, S, kAttentionMassKinds, H]: diagnostics sums, when a sequence asks
  kCount,
};

class Workspace {
 public:
  explicit Workspace(Backend& backend) : backend_(backend) {}

  // A dense [rows, cols] matrix in scratch `slot`, of the backend's activation dtype or of `dtype`.
  absl::StatusOr<DeviceMatrix> Matrix(Scratch slot, int64_t rows, int64_t cols);
  absl::StatusOr<DeviceMatrix> Matrix(Scratch slot, int64_t rows, int64_t cols, DType dtype);
  // Copies `arrays` to the device in one transfer (scratch kStepMetadata, each array at a 64-byte-aligned offset),
  // through a staging buffer of Backend::AllocateStaging; returns their device addresses in order. The staging
  // buffer is rewritten by the next call: the caller synchronises the backend in between (every forward step ends
  // with Synchronize).
  struct HostArray {
    const void* data;
    size_t bytes;
  };
  template <typename T>
  static HostArray Of(const std::vector<T>& values) {
    return HostArray{values.data(), values.size() * sizeof(T)};
  }
  absl::StatusOr<std::vector<const void*>> UploadTogether(const std::vector<HostArray>& arrays);
  // Total bytes held.
  size_t bytes() const;

 private:
  absl::StatusOr<void*> Reserve(Scratch slot, size_t bytes);

  Backend& backend_;
  std::unique_ptr<DeviceBuffer> staging_;  // host side of UploadTogether
  std::array<std::unique_ptr<DeviceBuffer>, static_cast<size_t>(Scratch::kCount)> buffers_;
};

}  // namespace arach
