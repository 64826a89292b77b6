// CUDA / cuBLASLt error codes as absl::Status.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace arach::cuda {

inline absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuda: ", what, ": ", cudaGetErrorString(err)));
}

inline absl::Status CublasStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cublasLt: ", what, ": status ", static_cast<int>(status)));
}

}  // namespace arach::cuda

#define ARACH_CUDA_RETURN_IF_ERROR(expr, what) ARACH_RETURN_IF_ERROR(::arach::cuda::CudaStatus((expr), (what)))
#define ARACH_CUBLAS_RETURN_IF_ERROR(expr, what) ARACH_RETURN_IF_ERROR(::arach::cuda::CublasStatus((expr), (what)))
