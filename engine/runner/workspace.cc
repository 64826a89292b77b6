#include "engine/runner/workspace.h"

#include "engine/core/status.h"

namespace arach {

absl::StatusOr<void*> Workspace::Reserve(Scratch slot, size_t bytes) {
  std::unique_ptr<DeviceBuffer>& buffer = buffers_[static_cast<size_t>(slot)];
  if (buffer == nullptr || buffer->size() < bytes) {
    const size_t grown = buffer == nullptr ? bytes : std::max(bytes, buffer->size() + buffer->size() / 2);
    buffer.reset();
    ARACH_ASSIGN_OR_RETURN(buffer, backend_.Allocate(grown));
  }
  return buffer->data();
}

absl::StatusOr<DeviceMatrix> Workspace::Matrix(Scratch slot, int64_t rows, int64_t cols) {
  return Matrix(slot, rows, cols, backend_.activation_dtype());
}

absl::StatusOr<DeviceMatrix> Workspace::Matrix(Scratch slot, int64_t rows, int64_t cols, DType dtype) {
  ARACH_ASSIGN_OR_RETURN(void* data, Reserve(slot, static_cast<size_t>(rows * cols) * DTypeSize(dtype)));
  return DeviceMatrix::Dense(data, dtype, rows, cols);
}

absl::StatusOr<const int32_t*> Workspace::Upload(Scratch slot, const std::vector<int32_t>& values) {
  ARACH_ASSIGN_OR_RETURN(void* data, Reserve(slot, values.size() * sizeof(int32_t)));
  backend_.CopyToDevice(data, values.data(), values.size() * sizeof(int32_t));
  return static_cast<const int32_t*>(data);
}

absl::StatusOr<const float*> Workspace::Upload(Scratch slot, const std::vector<float>& values) {
  ARACH_ASSIGN_OR_RETURN(void* data, Reserve(slot, values.size() * sizeof(float)));
  backend_.CopyToDevice(data, values.data(), values.size() * sizeof(float));
  return static_cast<const float*>(data);
}

size_t Workspace::bytes() const {
  size_t total = 0;
  for (const auto& buffer : buffers_) total += buffer == nullptr ? 0 : buffer->size();
  return total;
}

}  // namespace arach
