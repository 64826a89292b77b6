// The CPU backend's thread team: parallel loops over chunks of work. The backend parallelises its own kernels
// and runs OpenBLAS single-threaded inside them, so that one team of threads does all the work.
//
// Built for a node the process does not have to itself (a busy neighbour, a second replica, a CPU-limited pod),
// where one of the team's threads is often descheduled:
//  - a loop ends when its chunks are done, not when every thread has passed a barrier: the calling thread and
//    whichever workers are running take the chunks one at a time, and a worker that wakes late finds nothing
//    left and is not waited for (an OpenMP region's closing barrier waits a scheduler time slice for it, dozens
//    of times a step);
//  - a thread with nothing to do spins only briefly (kSpinsBeforeSleep) and then sleeps on a futex, so it does
//    not take the CPU from the thread doing the work, and it never yields (see WaitWord).
// Figures: docs/ARCHITECTURE.md (Threads) and the issue-18 notes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace arach::cpu {

// A 32-bit word that threads wait on until it changes: a short spin, then sleep on a Linux futex. Waiters never
// call sched_yield (std::atomic::wait in libstdc++ yields a dozen times before it sleeps): beside a busy
// neighbour each yield hands the core to the neighbour for a whole time slice, while a thread woken from a
// futex runs at once. Measured: decode beside a spinning two-thread job, 45.6 ms/step with atomic::wait.
class WaitWord {
 public:
  uint32_t Load() const { return value_.load(std::memory_order_acquire); }
  // Sets the word and wakes every sleeping waiter.
  void Store(uint32_t value);
  // Waits until the word differs from `old` (up to `spins` CPU pauses, then asleep) and returns its value.
  uint32_t WaitForChange(uint32_t old, int spins) const;

 private:
  std::atomic<uint32_t> value_{0};
  mutable std::atomic<int> sleepers_{0};  // waiters inside the futex call (or about to be): Store wakes only then
};

// Chunks per thread a kernel's loop is cut into (ForChunks' grain = items / (threads * kChunksPerThread)): with
// chunks claimed dynamically, a thread that stalls has its share taken over by the others.
inline constexpr int64_t kChunksPerThread = 4;

class ThreadTeam {
 public:
  // `threads` counts the calling thread: threads - 1 workers are started. With one thread every loop runs on
  // the caller.
  explicit ThreadTeam(int threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on chunks of `grain` items (the last one shorter) covering [0, count), in parallel.
  // The team runs one loop at a time: a loop started while another runs (another calling thread, or a loop
  // body that starts one) runs on its caller alone.
  template <typename Fn>
  void ForChunks(int64_t count, int64_t grain, const Fn& fn) {
    grain = std::max<int64_t>({grain, 1, (count + kMaxChunks - 1) / kMaxChunks});
    const int64_t chunks = (count + grain - 1) / grain;
    if (workers_.empty() || chunks <= 1) {
      if (count > 0) fn(int64_t{0}, count);
      return;
    }
    Run(chunks, [&](int64_t chunk, int) { fn(chunk * grain, std::min(count, (chunk + 1) * grain)); });
  }

  // Calls fn(i, thread) for every i in [0, count), one item per chunk; `thread` in [0, threads()) names the
  // running thread (for per-thread scratch).
  template <typename Fn>
  void ForEach(int64_t count, const Fn& fn) {
    if (workers_.empty() || count <= 1) {
      for (int64_t i = 0; i < count; ++i) fn(i, 0);
      return;
    }
    Run(count, [&](int64_t chunk, int thread) { fn(chunk, thread); });
  }

 private:
  using ChunkFn = absl::FunctionRef<void(int64_t chunk, int thread)>;
  static constexpr int64_t kMaxChunks = 0xffff;  // a loop's chunk count fits the claim word's 16 bits
  // Spins (each a CPU pause) of a thread that waits, before it sleeps: long enough to catch the next loop of a
  // step (a few microseconds apart), short enough not to take a time slice from a working thread.
  static constexpr int kSpinsBeforeSleep = 1000;

  void Run(int64_t chunks, ChunkFn fn);
  // Runs every chunk on the calling thread (index 0).
  static void RunOnCaller(int64_t chunks, ChunkFn fn);
  void WorkerLoop(int thread);
  // Claims and runs chunks of the current loop until none is left unclaimed.
  void RunChunks(int thread);

  std::vector<std::thread> workers_;
  // The current loop. `fn_` is written only while no chunk is claimed or running (between loops).
  const ChunkFn* fn_ = nullptr;
  std::atomic<uint64_t> claim_{0};           // loop number (high 32 bits) | chunk count (16) | next unclaimed chunk (16)
  std::atomic<int64_t> unfinished_{0};       // chunks of the current loop not yet finished
  WaitWord started_loop_;                     // workers wait for it to change
  WaitWord finished_loop_;                    // the caller waits for it to reach the loop it started
  std::atomic<bool> stopping_{false};
  std::atomic<bool> loop_running_{false};     // a loop owns the team
  uint32_t loops_ = 0;                       // loops started (the caller's count)
};

}  // namespace arach::cpu
