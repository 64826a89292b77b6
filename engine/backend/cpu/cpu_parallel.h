// Parallel loops of the CPU backend (OpenMP underneath). The backend parallelises its own kernels and
// runs OpenBLAS single-threaded inside them, so that one pool of threads does all the work.
#pragma once

#include <cstdint>

#include <omp.h>

namespace arach::cpu {

// Calls fn(begin, end) on `parts` contiguous ranges covering [0, count), in parallel.
template <typename Fn>
void ParallelRanges(int64_t count, int parts, const Fn& fn) {
  if (parts <= 1 || count <= 1) {
    fn(int64_t{0}, count);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(parts)
  for (int p = 0; p < parts; ++p) {
    const int64_t begin = count * p / parts;
    const int64_t end = count * (p + 1) / parts;
    if (begin < end) fn(begin, end);
  }
}

// Calls fn(begin, end) on chunks of `grain` items (the last one shorter) covering [0, count), handed out
// one at a time to `threads` threads. On a shared node a thread can be descheduled mid-step: with static
// ranges every other thread then waits a scheduler time slice at the region's end; here the running
// threads take over the chunks it has not started.
template <typename Fn>
void ParallelChunks(int64_t count, int threads, int64_t grain, const Fn& fn) {
  if (grain < 1) grain = 1;
  const int64_t chunks = (count + grain - 1) / grain;
  if (threads <= 1 || chunks <= 1) {
    if (count > 0) fn(int64_t{0}, count);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t c = 0; c < chunks; ++c) fn(c * grain, c + 1 == chunks ? count : (c + 1) * grain);
}

// Calls fn(i) for i in [0, count) on `threads` threads, dynamically balanced.
template <typename Fn>
void ParallelFor(int64_t count, int threads, const Fn& fn) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t i = 0; i < count; ++i) fn(i);
}

}  // namespace arach::cpu
