#include "engine/backend/backend.h"

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_device.h"

namespace arach {

absl::string_view DeviceKindName(DeviceKind kind) { return kind == DeviceKind::kCpu ? "cpu" : "cuda"; }

absl::StatusOr<DeviceKind> ParseDeviceKind(absl::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return absl::InvalidArgumentError(absl::StrCat("device \"", name, "\" is not one of cpu, cuda"));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(DeviceKind kind) {
  if (kind == DeviceKind::kCpu) return std::unique_ptr<Backend>(new CpuBackend());
  // The CUDA kernels land with the CUDA backend issue; until then report what this build can see.
  auto devices = ListCudaDevices();
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return absl::FailedPreconditionError("cuda: no CUDA device is present");
  return absl::UnimplementedError(absl::StrCat("cuda: ", devices->size(),
                                               " device(s) present, but this build has no CUDA forward yet; use --device cpu"));
}

}  // namespace arach
