// The SIMT simulator itself: barriers order shared memory, shuffles exchange as the hardware does, and a
// barrier that cannot complete fails the launch instead of hanging.
#include <numeric>
#include <vector>

#include "cuda_runtime.h"
#include "gtest/gtest.h"

namespace {

#define LAUNCH(kernel, grid, block) ::simt::Launch(kernel, #kernel, grid, block, 0, nullptr)

// Each block reverses its slice of `data` through shared memory (needs the barrier between write and read).
__global__ void ReverseThroughShared(int* data) {
  __shared__ int tile[64];
  const int base = blockIdx.x * blockDim.x;
  tile[threadIdx.x] = data[base + threadIdx.x];
  __syncthreads();
  data[base + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

TEST(Simt, SyncThreadsOrdersSharedMemoryWithinEachBlock) {
  std::vector<int> data(3 * 64);
  std::iota(data.begin(), data.end(), 0);
  LAUNCH(ReverseThroughShared, 3, 64)(data.data());
  ASSERT_EQ(simt::TakeFailure(), "");
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 64; ++t) EXPECT_EQ(data[b * 64 + t], b * 64 + 63 - t);
  }
}

// out[t] = sum of the warp's lanes (butterfly), broadcast of lane 5, and lane (t ^ 1)'s value.
__global__ void WarpCollectives(const float* in, float* sums, float* broadcasts, float* swapped) {
  const int t = threadIdx.x;
  float v = in[t];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  sums[t] = v;
  broadcasts[t] = __shfl_sync(0xffffffffu, in[t], 5);
  swapped[t] = __shfl_xor_sync(0xffffffffu, in[t], 1);
}

TEST(Simt, ShufflesExchangeWithinEachWarp) {
  std::vector<float> in(64), sums(64), broadcasts(64), swapped(64);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i * i % 17);
  LAUNCH(WarpCollectives, 1, 64)(in.data(), sums.data(), broadcasts.data(), swapped.data());
  ASSERT_EQ(simt::TakeFailure(), "");
  for (int w = 0; w < 2; ++w) {
    const float warp_sum = std::accumulate(in.begin() + 32 * w, in.begin() + 32 * (w + 1), 0.0f);
    for (int lane = 0; lane < 32; ++lane) {
      const int t = 32 * w + lane;
      EXPECT_EQ(sums[t], warp_sum) << t;
      EXPECT_EQ(broadcasts[t], in[32 * w + 5]) << t;
      EXPECT_EQ(swapped[t], in[t ^ 1]) << t;
    }
  }
}

__global__ void CoordinatesOf(dim3* blocks, dim3* threads) {
  const int flat = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
  blocks[flat] = dim3(blockIdx.x, blockIdx.y, blockIdx.z);
  threads[flat] = dim3(threadIdx.x, threadIdx.y, threadIdx.z);
}

TEST(Simt, EveryThreadOfEveryBlockRunsOnceWithItsCoordinates) {
  std::vector<dim3> blocks(2 * 3 * 4 * 8, dim3(99, 99, 99)), threads(blocks.size(), dim3(99, 99, 99));
  LAUNCH(CoordinatesOf, dim3(2, 3), dim3(4, 8))(blocks.data(), threads.data());
  ASSERT_EQ(simt::TakeFailure(), "");
  for (unsigned by = 0; by < 3; ++by) {
    for (unsigned bx = 0; bx < 2; ++bx) {
      for (unsigned ty = 0; ty < 8; ++ty) {
        for (unsigned tx = 0; tx < 4; ++tx) {
          const size_t flat = ((by * 2 + bx) * 32) + ty * 4 + tx;
          EXPECT_EQ(blocks[flat].x, bx);
          EXPECT_EQ(blocks[flat].y, by);
          EXPECT_EQ(threads[flat].x, tx);
          EXPECT_EQ(threads[flat].y, ty);
        }
      }
    }
  }
}

__global__ void DivergentSyncThreads(int* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1;
  __syncthreads();
}

// Threads that exit early count as arrived (what the hardware does for threads past a bounds check).
__global__ void EarlyExitThenSync(int* out) {
  if (threadIdx.x >= 40) return;
  out[threadIdx.x] = 1;
  __syncthreads();
  const int next = out[(threadIdx.x + 1) % 40];
  __syncthreads();
  out[threadIdx.x] += next;
}

TEST(Simt, ABarrierThatCannotCompleteFailsTheLaunchNamingTheKernel) {
  std::vector<int> out(64);
  LAUNCH(DivergentSyncThreads, 2, 64)(out.data());
  const std::string failure = simt::TakeFailure();
  EXPECT_NE(failure.find("DivergentSyncThreads block (0,0,0): deadlock: 64 threads at __syncthreads ("), std::string::npos) << failure;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failure was taken";

  std::vector<int> counted(64, 0);
  LAUNCH(EarlyExitThenSync, 1, 64)(counted.data());
  ASSERT_EQ(simt::TakeFailure(), "");
  for (int t = 0; t < 40; ++t) EXPECT_EQ(counted[t], 2);
  for (int t = 40; t < 64; ++t) EXPECT_EQ(counted[t], 0);
}

TEST(Simt, LaunchesTheSimulatorCannotRunAreRefused) {
  LAUNCH(EarlyExitThenSync, 1, 2048)(nullptr);
  EXPECT_NE(simt::TakeFailure().find("invalid launch"), std::string::npos);
}

#if defined(__SANITIZE_ADDRESS__)
// A thread's local array, on its fiber's stack, read one past its end after a barrier (a switch away and back):
// `reach` is 0 or 1 at run time, so the compiler cannot see the overflow.
__global__ void ReadPastALocalAfterABarrier(const int* reach, int* out) {
  int local[8];
  for (int i = 0; i < 8; ++i) local[i] = i + static_cast<int>(threadIdx.x);
  __syncthreads();
  const int* through_a_pointer = local;  // past UBSan's bounds check of arrays, to ASan's
  out[threadIdx.x] = through_a_pointer[7 + reach[threadIdx.x]];
}

// ASan checks the simulated kernels (scripts/sanitize.sh runs the kernel suites under it): their stacks are fibers
// switched without ASan's longjmp clean-up (simt.cc), and a local's redzone still holds after several switches.
TEST(SimtUnderAsan, AnOverflowOfALocalOnAFibersStackIsReported) {
  std::vector<int> out(64);
  std::vector<int> reach(64, 0);
  for (int launch = 0; launch < 3; ++launch) LAUNCH(ReadPastALocalAfterABarrier, 2, 64)(reach.data(), out.data());
  ASSERT_EQ(simt::TakeFailure(), "");
  EXPECT_EQ(out[63], 7 + 63);
  reach[40] = 1;
  EXPECT_DEATH(LAUNCH(ReadPastALocalAfterABarrier, 2, 64)(reach.data(), out.data()), "stack-buffer-overflow");
}
#endif

}  // namespace
