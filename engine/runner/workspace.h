// Device scratch memory of the forward, grown on demand and reused across steps.
#pragma once

#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/backend/staged_upload.h"

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
  kHiddenSums,    // [sequences returning a hidden state, d] float32 (ModelRunner::DownloadHiddenSums)
  kLogits,        // [logit rows, V] float32: rows sampled or returned
  kScoredLogits,  // [scored rows of one block, V] float32 (ModelRunner::ScoreInBlocks)
  kAdapterX,       // [skip rows, d]: x^ then x~
  kAdapterInner,   // [skip rows, E]
  kAdapterSkip,    // [skip rows, d]
  kLoraX,          // [one adapter's rows, projection input]
  kLoraInner,      // [one adapter's rows, R]
  kLoraDelta,      // [one adapter's rows, projection output]
  kAttentionMass,  // float [L, S, kAttentionMassKinds, H]: diagnostics sums, when a sequence asks
  kCount,
};

class Workspace {
 public:
  explicit Workspace(Backend& backend) : backend_(backend), metadata_(backend) {}

  // A dense [rows, cols] matrix in scratch `slot`, of the backend's activation dtype or of `dtype`.
  absl::StatusOr<DeviceMatrix> Matrix(Scratch slot, int64_t rows, int64_t cols);
  absl::StatusOr<DeviceMatrix> Matrix(Scratch slot, int64_t rows, int64_t cols, DType dtype);
  // Copies `arrays` to the device in one transfer (StagedUpload::Upload); the next call rewrites them, so the
  // caller synchronises the backend in between (every forward step ends with Synchronize).
  using HostArray = StagedUpload::HostArray;
  template <typename T>
  static HostArray Of(const std::vector<T>& values) {
    return StagedUpload::Of(values);
  }
  absl::StatusOr<std::vector<const void*>> UploadTogether(const std::vector<HostArray>& arrays) {
    return metadata_.Upload(arrays);
  }
  // Total bytes held.
  size_t bytes() const;

  // While a step graph is recorded no scratch may be (re)allocated: a CUDA stream capture forbids cudaMalloc and
  // cudaFree, and the recorded kernels keep the addresses they were given. Matrix then refuses to grow a buffer
  // (FailedPrecondition) and remembers it; TakeRefusedGrowth says whether it did since the last call.
  void set_recording(bool recording) { recording_ = recording; }
  bool TakeRefusedGrowth() { return std::exchange(refused_growth_, false); }
  // Changes whenever a buffer is (re)allocated: while it is unchanged, Matrix and UploadTogether give the same
  // addresses for the same sizes (what a recorded step graph relies on).
  uint64_t generation() const { return allocations_ + metadata_.device_allocations(); }

 private:
  absl::StatusOr<void*> Reserve(Scratch slot, size_t bytes);

  Backend& backend_;
  StagedUpload metadata_;  // the step's int32 / float32 arrays
  uint64_t allocations_ = 0;
  bool recording_ = false;
  bool refused_growth_ = false;
  std::array<std::unique_ptr<DeviceBuffer>, static_cast<size_t>(Scratch::kCount)> buffers_;
};

}  // namespace arach
