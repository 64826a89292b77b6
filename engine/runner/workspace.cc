#include "engine/runner/workspace.h"

#include <cstring>

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

absl::StatusOr<std::vector<const void*>> Workspace::UploadTogether(const std::vector<HostArray>& arrays) {
  constexpr size_t kAlign = 64;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const HostArray& array : arrays) {
    offsets.push_back(total);
    total += (array.bytes + kAlign - 1) / kAlign * kAlign;
  }
  if (staging_ == nullptr || staging_->size() < total) {
    const size_t grown = staging_ == nullptr ? total : std::max(total, staging_->size() + staging_->size() / 2);
    staging_.reset();
    ARACH_ASSIGN_OR_RETURN(staging_, backend_.AllocateStaging(grown));
  }
  ARACH_ASSIGN_OR_RETURN(void* device, Reserve(Scratch::kStepMetadata, total));
  char* host = static_cast<char*>(staging_->data());
  std::vector<const void*> addresses;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].bytes > 0) std::memcpy(host + offsets[i], arrays[i].data, arrays[i].bytes);
    addresses.push_back(static_cast<const char*>(device) + offsets[i]);
  }
  backend_.CopyToDevice(device, host, total);
  return addresses;
}

size_t Workspace::bytes() const {
  size_t total = 0;
  for (const auto& buffer : buffers_) total += buffer == nullptr ? 0 : buffer->size();
  return total;
}

}  // namespace arach
