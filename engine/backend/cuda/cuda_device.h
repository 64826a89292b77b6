// What CUDA devices this process can see (compiled only where the CUDA toolkit was found).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arach {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  size_t total_memory_bytes = 0;
  size_t free_memory_bytes = 0;
};

// The visible devices; empty where none is present. FAILED_PRECONDITION in builds without CUDA.
absl::StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices();

}  // namespace arach
