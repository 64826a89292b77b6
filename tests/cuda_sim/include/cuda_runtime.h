// The SIMT simulator's stand-in for <cuda_runtime.h>: what our own kernels (engine/backend/cuda/*.cu) use of
// CUDA, written as C++ so that g++ compiles those kernels unchanged and runs their blocks and threads on the
// CPU (tests labelled cuda-sim; CI has no GPU). Only this folder's include path makes a kernel source see this
// header instead of the toolkit's.
//
// Execution model (simt.cc): a launch runs its blocks one after another; inside a block every CUDA thread is a
// fiber (ucontext) with its own stack, and the fibers take turns. A thread runs until it reaches a barrier:
// __syncthreads() waits for every thread of the block that has not exited, a warp collective (__shfl*_sync,
// __syncwarp) for every lane of its warp that has not exited. A block whose live threads wait at barriers that
// can never complete (a __syncthreads under divergent control flow, a shuffle only some lanes reach) fails the
// launch with a message naming the kernel and block. `__shared__` variables are function statics: one copy
// shared by the threads of the block running now (blocks never overlap). atomicAdd is a plain add (one OS
// thread runs a launch; launches are serialised).
//
// Not modelled: warp-synchronous code that relies on lockstep execution without a collective, memory fences,
// dynamic shared memory, streams (a launch completes before Launch returns), and the toolkit's API beyond
// cudaGetLastError.
#pragma once

#include <cmath>  // expf, exp2f, log2f, sincosf, erff, tanhf, fmaxf: the same names as CUDA's device maths
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __restrict__

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }

struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaError_t { cudaSuccess = 0, cudaErrorLaunchFailure = 719 };
const char* cudaGetErrorString(cudaError_t error);

namespace simt {

// The coordinates of the CUDA thread running now (valid only inside a launch).
struct ThreadCoordinates {
  uint3 thread_idx, block_idx;
  dim3 block_dim, grid_dim;
};
const ThreadCoordinates& Current();

// Barriers (see the header comment). `site` names the __syncthreads call ("file:line"): threads of a block
// waiting at different calls are divergent, and the launch fails.
void SyncThreads(const char* site);
void SyncWarp();
// Every live lane of the calling warp publishes `value`; returns the value lane `source_lane` published.
float ExchangeFloat(float value, int source_lane);
int64_t ExchangeInt64(int64_t value, int source_lane);
int LaneId();

// The first failed launch since the last call, described ("" when none): what cudaGetLastError reports as an
// error code. Tests read it after each launch.
std::string TakeFailure();
void RecordFailure(const std::string& message);

// Runs `body` (one CUDA thread's work) for every thread of every block; records a failure for
// cudaGetLastError. `kernel_name` is for messages.
void RunGrid(const char* kernel_name, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
             const std::function<void()>& body);

// What kernel<<<grid, block, shared, stream>>>(args...) does: the ARACH_LAUNCH macro of
// engine/backend/cuda/cuda_common.cuh expands to Launch(kernel, grid, block, shared, stream)(args...).
template <typename Kernel>
class Launcher {
 public:
  Launcher(Kernel* kernel, const char* name, dim3 grid, dim3 block, size_t shared_bytes)
      : kernel_(kernel), name_(name), grid_(grid), block_(block), shared_bytes_(shared_bytes) {}
  template <typename... Args>
  void operator()(Args&&... args) const {
    // Every thread gets the same by-value copies of the arguments, as kernel parameters are.
    auto call = [this, &args...]() { kernel_(args...); };
    RunGrid(name_, grid_, block_, shared_bytes_, call);
  }

 private:
  Kernel* kernel_;
  const char* name_;
  dim3 grid_, block_;
  size_t shared_bytes_;
};

template <typename Kernel>
Launcher<Kernel> Launch(Kernel* kernel, const char* name, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t) {
  return Launcher<Kernel>(kernel, name, grid, block, shared_bytes);
}

}  // namespace simt

cudaError_t cudaGetLastError();

#define threadIdx (::simt::Current().thread_idx)
#define blockIdx (::simt::Current().block_idx)
#define blockDim (::simt::Current().block_dim)
#define gridDim (::simt::Current().grid_dim)

#define ARACH_SIMT_STRING(x) #x
#define ARACH_SIMT_LINE(x) ARACH_SIMT_STRING(x)
#define __syncthreads() ::simt::SyncThreads(__FILE__ ":" ARACH_SIMT_LINE(__LINE__))
inline void __syncwarp(unsigned = 0xffffffffu) { simt::SyncWarp(); }
inline float __shfl_xor_sync(unsigned, float v, int mask) { return simt::ExchangeFloat(v, simt::LaneId() ^ mask); }
inline float __shfl_sync(unsigned, float v, int lane) { return simt::ExchangeFloat(v, lane); }
inline int __shfl_sync(unsigned, int v, int lane) { return static_cast<int>(simt::ExchangeInt64(v, lane)); }
inline int64_t __shfl_sync(unsigned, int64_t v, int lane) { return simt::ExchangeInt64(v, lane); }
inline float __shfl_down_sync(unsigned, float v, unsigned delta) {
  const int source = simt::LaneId() + static_cast<int>(delta);
  return simt::ExchangeFloat(v, source < 32 ? source : simt::LaneId());
}
inline float atomicAdd(float* address, float value) {
  const float old = *address;
  *address = old + value;
  return old;
}
inline int atomicAdd(int* address, int value) {
  const int old = *address;
  *address = old + value;
  return old;
}

inline float __expf(float x) { return std::exp(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
