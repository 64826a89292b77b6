// How the FlashInfer translation units report a CUDA error: as the text flashinfer_kernels.h's entry points return
// (empty on success; the CUDA backend turns a non-empty one into a Status). They keep to strings because they are
// compiled by nvcc without Abseil.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace arach::cuda {

// "what: CUDA's message" for `error`, or "" for cudaSuccess.
inline std::string CudaErrorText(cudaError_t error, const char* what) {
  return error == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(error);
}

// After a kernel launch: its call's own error, else a launch error left in the thread's last error.
inline std::string LaunchErrorText(cudaError_t error, const char* what) {
  return CudaErrorText(error == cudaSuccess ? cudaGetLastError() : error, what);
}

}  // namespace arach::cuda
