// Built instead of cuda_device.cu where the CUDA toolkit was not found at configure time.
#include "engine/backend/cuda/cuda_device.h"

namespace arach {

absl::StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  return absl::FailedPreconditionError("cuda: this build has no CUDA backend (" ARACH_CUDA_BUILD_NOTE ")");
}

}  // namespace arach
