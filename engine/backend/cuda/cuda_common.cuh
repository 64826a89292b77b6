// Device helpers shared by the kernels: 16-bit elements (bf16 or f16, the backend's activation dtype) <-> float,
// row pointers, warp and block reductions, the launch macro.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/attention_params.h"
#include "engine/backend/device_matrix.h"

namespace arach::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;

// A kernel-side copy of a DeviceMatrix of T (bf16 or f16).
template <typename T>
struct Rows {
  T* data;
  int64_t rows, cols, stride;
  __host__ explicit Rows(const DeviceMatrix& m) : data(static_cast<T*>(m.data)), rows(m.rows), cols(m.cols), stride(m.stride) {}
  __device__ T* row(int64_t r) const { return data + r * stride; }
};

__device__ __forceinline__ float ToFloat(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float ToFloat(f16 x) { return __half2float(x); }
// Round to nearest even (f16: beyond +-65504 gives +-inf, as the hardware conversion does).
template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ bf16 FromFloat<bf16>(float x) { return __float2bfloat16(x); }
template <>
__device__ __forceinline__ f16 FromFloat<f16>(float x) { return __float2half(x); }

// Two adjacent elements (p 4-byte aligned) as float2, and stored from two floats.
__device__ __forceinline__ float2 LoadPair(const bf16* p) { return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p)); }
__device__ __forceinline__ float2 LoadPair(const f16* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__device__ __forceinline__ void StorePair(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void StorePair(f16* p, float a, float b) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b); }

// Runs the statements after `T` with `T` the element type of `dtype`: f16 for DType::kF16, else bf16.
#define ARACH_DISPATCH_HALF(dtype, T, ...)  \
  if ((dtype) == ::arach::DType::kF16) {    \
    using T = ::arach::cuda::f16;           \
    __VA_ARGS__                             \
  } else {                                  \
    using T = ::arach::cuda::bf16;          \
    __VA_ARGS__                             \
  }

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

// Whether sequence `seq` of an attention call has the ARACH hub (then one hub row per verbal row, from
// p.hub_start[seq]).
__device__ __forceinline__ bool SequenceHasHub(const AttentionParams& p, int seq) {
  return p.num_hub_rows > 0 && p.hub_start[seq + 1] > p.hub_start[seq];
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
