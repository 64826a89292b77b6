#include "engine/backend/cpu/cpu_parallel.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace arach::cpu {
namespace {

inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// claim word: loop number | chunk count | next unclaimed chunk.
constexpr uint64_t PackClaim(uint32_t loop, int64_t chunks, int64_t next) {
  return (uint64_t{loop} << 32) | (static_cast<uint64_t>(chunks) << 16) | static_cast<uint64_t>(next);
}
constexpr uint32_t ClaimLoop(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
constexpr int64_t ClaimChunks(uint64_t claim) { return static_cast<int64_t>((claim >> 16) & 0xffff); }
constexpr int64_t ClaimNext(uint64_t claim) { return static_cast<int64_t>(claim & 0xffff); }

uint32_t* FutexAddress(const std::atomic<uint32_t>& word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint32_t>*>(&word));
}

}  // namespace

void WaitWord::Store(uint32_t value) {
  // seq_cst on both sides (here: store, then load sleepers_; the waiter: count itself, then load the word): one
  // of the two sees the other, so a waiter never sleeps through the change.
  value_.store(value, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, FutexAddress(value_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

uint32_t WaitWord::WaitForChange(uint32_t old, int spins) const {
  for (int i = 0; i < spins; ++i) {
    const uint32_t now = value_.load(std::memory_order_acquire);
    if (now != old) return now;
    CpuPause();
  }
  while (true) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (value_.load(std::memory_order_seq_cst) == old) {
      // Returns at once if the word no longer holds `old`; spurious wake-ups loop.
      syscall(SYS_futex, FutexAddress(value_), FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    const uint32_t now = value_.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

ThreadTeam::ThreadTeam(int threads) {
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadTeam::~ThreadTeam() {
  stopping_.store(true, std::memory_order_release);
  started_loop_.Store(loops_ + 1);
  for (std::thread& worker : workers_) worker.join();
}

void ThreadTeam::RunOnCaller(int64_t chunks, ChunkFn fn) {
  for (int64_t chunk = 0; chunk < chunks; ++chunk) fn(chunk, 0);
}

void ThreadTeam::Run(int64_t chunks, ChunkFn fn) {
  if (loop_running_.exchange(true, std::memory_order_acquire)) {
    RunOnCaller(chunks, fn);
    return;
  }
  const uint32_t loop = ++loops_;
  fn_ = &fn;
  unfinished_.store(chunks, std::memory_order_relaxed);
  claim_.store(PackClaim(loop, chunks, 0), std::memory_order_release);  // publishes fn_ and unfinished_
  started_loop_.Store(loop);
  RunChunks(/*thread=*/0);
  // Chunks that workers claimed may still be running.
  uint32_t finished = finished_loop_.Load();
  while (finished != loop) finished = finished_loop_.WaitForChange(finished, kSpinsBeforeSleep);
  fn_ = nullptr;
  loop_running_.store(false, std::memory_order_release);
}

void ThreadTeam::RunChunks(int thread) {
  uint64_t claim = claim_.load(std::memory_order_acquire);
  while (ClaimNext(claim) < ClaimChunks(claim)) {
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // The loop cannot finish before this chunk does, so fn_ is still this loop's.
    (*fn_)(ClaimNext(claim), thread);
    if (unfinished_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      finished_loop_.Store(ClaimLoop(claim));
    }
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadTeam::WorkerLoop(int thread) {
  uint32_t seen = 0;
  while (true) {
    seen = started_loop_.WaitForChange(seen, kSpinsBeforeSleep);
    if (stopping_.load(std::memory_order_acquire)) return;
    RunChunks(thread);
  }
}

}  // namespace arach::cpu
