// Host arrays copied to device memory in one transfer, and the grow-on-demand device buffers that step-sized
// scratch is kept in. Used by the runner for a step's metadata (engine/runner/workspace.h), by the GPU's
// sampling for its per-row lists (engine/backend/cuda/device_sampling.h) and by the GPU's attention for the arrays
// of FlashInfer's plan (engine/backend/cuda/flashinfer_attention.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"

namespace arach {

// Makes `buffer` hold at least `bytes` (Backend::Allocate), growing by at least half its size so that slowly
// growing steps do not reallocate each time; returns its data. The old contents are not kept. Counts each
// allocation in `*allocations` when given (recorded step graphs point into such buffers).
absl::StatusOr<void*> GrowDeviceBuffer(Backend& backend, std::unique_ptr<DeviceBuffer>& buffer, size_t bytes,
                                       uint64_t* allocations = nullptr);

class StagedUpload {
 public:
  explicit StagedUpload(Backend& backend) : backend_(backend) {}

  struct HostArray {
    const void* data;
    size_t bytes;
  };
  template <typename T>
  static HostArray Of(const std::vector<T>& values) {
    return HostArray{values.data(), values.size() * sizeof(T)};
  }

  // Copies `arrays` to the device in one transfer (each at a 64-byte-aligned offset of one device buffer),
  // through a staging buffer of Backend::AllocateStaging (on a GPU: page-locked, so one DMA); returns their
  // device addresses in order. Both buffers are rewritten by the next call: the caller synchronises the backend
  // in between.
  absl::StatusOr<std::vector<const void*>> Upload(const std::vector<HostArray>& arrays);

  // Bytes held on the device.
  size_t device_bytes() const { return device_ == nullptr ? 0 : device_->size(); }
  // How many times the device buffer was (re)allocated: while it is unchanged, an array of the same place in the
  // list, after arrays of the same sizes, is uploaded to the same address.
  uint64_t device_allocations() const { return device_allocations_; }

 private:
  Backend& backend_;
  std::unique_ptr<DeviceBuffer> staging_;  // host side
  std::unique_ptr<DeviceBuffer> device_;
  uint64_t device_allocations_ = 0;
};

}  // namespace arach
