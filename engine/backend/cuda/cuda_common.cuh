// Device helpers shared by the kernels: bf16 <-> float, row pointers, warp and block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/device_matrix.h"

namespace arach::cuda {

using bf16 = __nv_bfloat16;

// A kernel-side copy of a DeviceMatrix of bf16.
struct Rows {
  bf16* data;
  int64_t rows, cols, stride;
  __host__ explicit Rows(const DeviceMatrix& m)
      : data(static_cast<bf16*>(m.data)), rows(m.rows), cols(m.cols), stride(m.stride) {}
  __device__ bf16* row(int64_t r) const { return data + r * stride; }
};

__device__ __forceinline__ float ToFloat(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bf16 ToBf16(float x) { return __float2bfloat16(x); }

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Index of the segment of `starts` ([count + 1], non-decreasing) that holds `value`: the last s with
// starts[s] <= value, so empty segments are skipped.
__device__ __forceinline__ int FindSegment(const int32_t* starts, int count, int value) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (starts[mid] <= value) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float BlockSum(float v, float* shared /* [32] */) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = WarpSum(v);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  v = lane < warps ? shared[lane] : 0.0f;
  return WarpSum(v);
}

// Launches `kernel` (a __global__ function) over `grid` x `block` threads on `stream`:
//   ARACH_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...);
// nvcc turns it into kernel<<<...>>>(args...); compiled as C++ by the tests' SIMT simulator (tests/cuda_sim), it
// runs the kernel's blocks and threads on the CPU.
#if defined(__CUDACC__)
#define ARACH_LAUNCH(kernel, grid, block, shared_bytes, stream) kernel<<<grid, block, shared_bytes, stream>>>
#else
#define ARACH_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::simt::Launch(kernel, #kernel, grid, block, shared_bytes, stream)
#endif

inline unsigned Blocks(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace arach::cuda
