#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_device.h"

namespace arach {

absl::StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  std::vector<CudaDeviceInfo> devices;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear the sticky error
    return devices;
  }
  if (err != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("cuda: cudaGetDeviceCount failed: ", cudaGetErrorString(err)));
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.total_memory_bytes = prop.totalGlobalMem;
    if (cudaSetDevice(i) == cudaSuccess) cudaMemGetInfo(&info.free_memory_bytes, &info.total_memory_bytes);
    devices.push_back(info);
  }
  return devices;
}

}  // namespace arach
