// A Backend for tests that runs the CUDA backend's own kernels (engine/backend/cuda/*.cu, compiled as C++
// against the SIMT simulator in this folder) on host memory: the op suites written for every device
// (tests/ops) run through it in CI, where no GPU is present (label cuda-sim). Like CudaBackend it keeps
// activations, weights and the KV cache in one 16-bit type, bf16 or f16. The one op that is not ours on the GPU, Linear (cuBLASLt),
// is computed here as cuBLASLt is configured to: bf16 inputs, float32 accumulation, the bias added in float32,
// the result rounded once to the output's dtype.
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace arach::testing {

// Computing in `element` (kBF16 or kF16).
std::unique_ptr<Backend> CreateSimulatedCudaBackend(DType element);
// As CreateBackend(kCuda, options) would: the type from PlanCudaDType.
absl::StatusOr<std::unique_ptr<Backend>> CreateSimulatedCudaBackendFor(const BackendOptions& options);

}  // namespace arach::testing
