// Which kernel runs each element-wise op of the CUDA backend: FlashInfer's (flashinfer_elementwise.cu) where it
// takes the shape, ours (cuda_elementwise.cu) otherwise. Inline plain C++, so that CudaBackend and the SIMT
// simulator's backend (tests/cuda_sim, where host stand-ins play FlashInfer's kernels) make the same choices.
// Each returns "" or the failed launch's message.
#pragma once

#include <cstdint>
#include <string>

#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/flashinfer_kernels.h"

namespace arach::cuda {

// Whether every row of `m` starts on a vector of `elements` elements (FlashInfer's kernels load 16 bytes at a time):
// its data pointer and its row stride are multiples of the vector.
inline bool RowsStartOnVectors(const DeviceMatrix& m, int64_t elements) {
  const int64_t bytes = elements * static_cast<int64_t>(DTypeSize(m.dtype));
  return reinterpret_cast<uintptr_t>(m.data) % static_cast<uintptr_t>(bytes) == 0 && m.stride % elements == 0;
}

inline bool IsHalfWidth(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }

// FlashInfer's RMSNorm reads gcd(8, cols) elements at a time.
inline int64_t RmsNormVector(int64_t cols) {
  int64_t a = 8, b = cols;
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

inline bool FlashInferTakesRmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out) {
  const int64_t vector = RmsNormVector(in.cols);
  return IsHalfWidth(in.dtype) && weight.dtype == in.dtype && out.dtype == in.dtype && RowsStartOnVectors(in, vector) &&
         RowsStartOnVectors(out, vector) && RowsStartOnVectors(weight, vector);
}

inline bool FlashInferTakesRmsNormHeads(const DeviceMatrix& x, int head_dim, const DeviceMatrix& weight) {
  const int64_t vector = RmsNormVector(head_dim);
  return IsHalfWidth(x.dtype) && weight.dtype == x.dtype && RowsStartOnVectors(x, vector) && RowsStartOnVectors(weight, vector);
}

// FlashInfer's cos/sin-table RoPE kernel is compiled for head sizes 64, 128, 256 and 512 (others go through its
// quantising path, which we do not use) and reads max(8, head_dim / 32) elements per thread; each thread's vector
// must lie in one half of the rotating dims.
inline bool FlashInferTakesRope(const DeviceMatrix& x, int head_dim, int rotary_dim) {
  if (!IsHalfWidth(x.dtype) || (head_dim != 64 && head_dim != 128 && head_dim != 256 && head_dim != 512)) return false;
  const int vector = head_dim / 32 > 8 ? head_dim / 32 : 8;
  return (rotary_dim / 2) % vector == 0 && RowsStartOnVectors(x, vector);
}

// FlashInfer's act-and-mul kernel reads 16-byte vectors of a dense [rows, 2I] input and writes a dense [rows, I].
inline bool FlashInferTakesGatedActivate(const DeviceMatrix& in, const DeviceMatrix& out) {
  const int64_t vector = 8;
  return IsHalfWidth(in.dtype) && out.dtype == in.dtype && in.contiguous() && out.contiguous() && out.cols % vector == 0 &&
         RowsStartOnVectors(in, vector) && RowsStartOnVectors(out, vector);
}

inline std::string RunRmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out,
                              cudaStream_t stream) {
  if (FlashInferTakesRmsNorm(in, weight, out)) return FlashInferRmsNorm(in, weight, eps, out, stream);
  LaunchNorm(in, weight, DeviceMatrix{}, eps, /*rms=*/true, out, stream);
  return {};
}

inline std::string RunRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps,
                                   cudaStream_t stream) {
  if (FlashInferTakesRmsNormHeads(x, head_dim, weight)) return FlashInferRmsNormHeads(x, heads, head_dim, weight, eps, stream);
  LaunchRmsNormHeads(x, heads, head_dim, weight, eps, stream);
  return {};
}

inline std::string RunRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                           const float* cos_sin, cudaStream_t stream) {
  if (FlashInferTakesRope(x, head_dim, rotary_dim)) return FlashInferRope(x, heads, head_dim, rotary_dim, positions, cos_sin, stream);
  LaunchRope(x, heads, head_dim, rotary_dim, positions, cos_sin, stream);
  return {};
}

inline std::string RunGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream) {
  if (FlashInferTakesGatedActivate(in, out)) return FlashInferGatedActivate(act, in, out, stream);
  LaunchGatedActivate(act, in, out, stream);
  return {};
}

}  // namespace arach::cuda
