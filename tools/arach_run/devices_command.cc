#include <cstdio>

#include "engine/backend/cuda/cuda_device.h"
#include "engine/core/status.h"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunDevices() {
  std::printf("cpu: available\n");
  auto devices = ListCudaDevices();
  if (!devices.ok()) {
    std::printf("cuda: %s\n", std::string(devices.status().message()).c_str());
    return absl::OkStatus();
  }
  if (devices->empty()) std::printf("cuda: no device present\n");
  for (const CudaDeviceInfo& d : *devices) {
    std::printf("cuda:%d %s (sm_%d%d), %.1f GiB total, %.1f GiB free\n", d.index, d.name.c_str(), d.compute_major,
                d.compute_minor, d.total_memory_bytes / 1073741824.0, d.free_memory_bytes / 1073741824.0);
  }
  return absl::OkStatus();
}

}  // namespace arach::tools
