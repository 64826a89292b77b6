#include "engine/backend/staged_upload.h"

#include <algorithm>
#include <cstring>

#include "engine/core/status.h"

namespace arach {
namespace {

size_t Grown(const std::unique_ptr<DeviceBuffer>& buffer, size_t bytes) {
  return buffer == nullptr ? bytes : std::max(bytes, buffer->size() + buffer->size() / 2);
}

}  // namespace

absl::StatusOr<void*> GrowDeviceBuffer(Backend& backend, std::unique_ptr<DeviceBuffer>& buffer, size_t bytes,
                                       uint64_t* allocations) {
  if (buffer == nullptr || buffer->size() < bytes) {
    const size_t grown = Grown(buffer, bytes);
    buffer.reset();
    ARACH_ASSIGN_OR_RETURN(buffer, backend.Allocate(grown));
    if (allocations != nullptr) ++*allocations;
  }
  return buffer->data();
}

absl::StatusOr<std::vector<const void*>> StagedUpload::Upload(const std::vector<HostArray>& arrays) {
  constexpr size_t kAlign = 64;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const HostArray& array : arrays) {
    offsets.push_back(total);
    total += (array.bytes + kAlign - 1) / kAlign * kAlign;
  }
  if (staging_ == nullptr || staging_->size() < total) {
    const size_t grown = Grown(staging_, total);
    staging_.reset();
    ARACH_ASSIGN_OR_RETURN(staging_, backend_.AllocateStaging(grown));
  }
  ARACH_ASSIGN_OR_RETURN(void* device, GrowDeviceBuffer(backend_, device_, total, &device_allocations_));
  char* host = static_cast<char*>(staging_->data());
  std::vector<const void*> addresses;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].bytes > 0) std::memcpy(host + offsets[i], arrays[i].data, arrays[i].bytes);
    addresses.push_back(static_cast<const char*>(device) + offsets[i]);
  }
  backend_.CopyToDevice(device, host, total);
  return addresses;
}

}  // namespace arach
