#include "engine/runner/workspace.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

absl::StatusOr<void*> Workspace::Reserve(Scratch slot, size_t bytes) {
  std::unique_ptr<DeviceBuffer>& buffer = buffers_[static_cast<size_t>(slot)];
  if (recording_ && (buffer == nullptr || buffer->size() < bytes)) {
    refused_growth_ = true;
    return absl::FailedPreconditionError(absl::StrCat("scratch area ", static_cast<int>(slot), " would grow to ", bytes,
                                                      " bytes while a step graph is recorded"));
  }
  return GrowDeviceBuffer(backend_, buffer, bytes, &allocations_);
}

absl::StatusOr<DeviceMatrix> Workspace::Matrix(Scratch slot, int64_t rows, int64_t cols) {
  return Matrix(slot, rows, cols, backend_.activation_dtype());
}

absl::StatusOr<DeviceMatrix> Workspace::Matrix(Scratch slot, int64_t rows, int64_t cols, DType dtype) {
  ARACH_ASSIGN_OR_RETURN(void* data, Reserve(slot, static_cast<size_t>(rows * cols) * DTypeSize(dtype)));
  return DeviceMatrix::Dense(data, dtype, rows, cols);
}

size_t Workspace::bytes() const {
  size_t total = 0;
  for (const auto& buffer : buffers_) total += buffer == nullptr ? 0 : buffer->size();
  return total + metadata_.device_bytes();
}

}  // namespace arach
