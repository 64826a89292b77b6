#include "engine/backend/backend.h"

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/status.h"
#include "engine/backend/cuda/cuda_device.h"
#if ARACH_WITH_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#endif

namespace arach {

absl::string_view DeviceKindName(DeviceKind kind) { return kind == DeviceKind::kCpu ? "cpu" : "cuda"; }

absl::StatusOr<DeviceKind> ParseDeviceKind(absl::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return absl::InvalidArgumentError(absl::StrCat("device \"", name, "\" is not one of cpu, cuda"));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(DeviceKind kind) {
  if (kind == DeviceKind::kCpu) return std::unique_ptr<Backend>(new CpuBackend());
  auto devices = ListCudaDevices();  // FAILED_PRECONDITION in builds without CUDA
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return absl::FailedPreconditionError("cuda: no CUDA device is present");
#if ARACH_WITH_CUDA
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> cuda, CudaBackend::Create(/*device_index=*/0));
  return std::unique_ptr<Backend>(std::move(cuda));
#else
  return absl::FailedPreconditionError("cuda: this build has no CUDA backend");
#endif
}

}  // namespace arach
