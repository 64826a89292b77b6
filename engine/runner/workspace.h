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
  kIds,           // int32 metadata ...
  kPositions,
  kSlots,
  kQueryStart,
  kBlockTableStart,
  kBlockTables,
  kLogitRows,
  kRopePositions,  // [rows]: verbal positions, then 0 for hub rows
  kHubStart,
  kHubOffsets,     // float [num_seqs]
  kSkipRows,       // rows of skip-on sequences
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
  // Copies `values` into scratch `slot`; returns the device pointer.
  absl::StatusOr<const int32_t*> Upload(Scratch slot, const std::vector<int32_t>& values);
  absl::StatusOr<const float*> Upload(Scratch slot, const std::vector<float>& values);
  // Total bytes held.
  size_t bytes() const;

 private:
  absl::StatusOr<void*> Reserve(Scratch slot, size_t bytes);

  Backend& backend_;
  std::array<std::unique_ptr<DeviceBuffer>, static_cast<size_t>(Scratch::kCount)> buffers_;
};

}  // namespace arach
