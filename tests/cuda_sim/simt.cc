// The SIMT simulator's scheduler: every CUDA thread of a block is a fiber that runs until it reaches a barrier
// or exits; when no fiber can run, the barriers whose participants have all arrived are released. See
// include/cuda_runtime.h for the model.
//
// A fiber is started once per launch on its own stack with makecontext/setcontext and then lives through every
// block of the launch (its loop runs the kernel body once per block); switches between a fiber and the
// scheduler are _setjmp/_longjmp, which, unlike swapcontext, make no system call (swapcontext saves the signal
// mask each time, which made the simulator spend most of its time in the kernel).
#undef _FORTIFY_SOURCE  // its longjmp check refuses jumps between stacks, which is what fibers are
#include <setjmp.h>
#include <ucontext.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace simt {
namespace {

// AddressSanitizer keeps a shadow of the running stack; switches between a fiber's stack and the scheduler's
// are announced to it (its fiber API), so that it checks the kernels' locals and shared arrays on the right
// stack. Nothing without ASan.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};
thread_local StackBounds scheduler_stack;  // learned by a fiber's first entry (with ASan only)
#if defined(__SANITIZE_ADDRESS__)
void StartSwitch(const void* bottom, size_t size) { __sanitizer_start_switch_fiber(nullptr, bottom, size); }
void FinishSwitch(StackBounds* previous) {
  __sanitizer_finish_switch_fiber(nullptr, previous == nullptr ? nullptr : &previous->bottom,
                                  previous == nullptr ? nullptr : &previous->size);
}
void ForgetStackContents(void* stacks, size_t bytes) { __asan_unpoison_memory_region(stacks, bytes); }
// ASan's _longjmp takes every jump for one that leaves frames for good: it unpoisons the whole stack it leaves and
// asks the kernel for the signal stack (a system call) each time, which made the simulated kernels run 100x slower
// than without ASan. A switch leaves no frame behind (each stack is resumed where it stopped; a launch's fiber stacks
// are unpoisoned whole before the next, ForgetStackContents), so switches call glibc's own _longjmp, as that
// interceptor does after its clean-up.
using LongJmp = void (*)(jmp_buf, int);
LongJmp LibcLongJmp() {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void* symbol = libc == nullptr ? nullptr : dlsym(libc, "_longjmp");
  return symbol == nullptr ? &_longjmp : reinterpret_cast<LongJmp>(symbol);
}
// The one frame a switch abandons (it never returns; the frames above it do, once resumed): uninstrumented, so it
// leaves no poisoned redzone behind on the stack it leaves, and not noreturn (declared or inferred), as ASan puts
// its clean-up before calls to those.
__attribute__((no_sanitize("address"))) void Jump(jmp_buf to) {
  static const LongJmp libc_longjmp = LibcLongJmp();
  libc_longjmp(to, 1);
}
#else
void StartSwitch(const void*, size_t) {}
void FinishSwitch(StackBounds*) {}
void ForgetStackContents(void*, size_t) {}
void Jump(jmp_buf to) { _longjmp(to, 1); }
#endif

constexpr size_t kStackBytes = 128 * 1024;
constexpr int kWarpSize = 32;

enum class FiberState { kRunnable, kAtBlockBarrier, kAtWarpBarrier, kExited };

struct Fiber {
  ucontext_t start;  // the fiber's first entry, onto its stack
  char* stack = nullptr;
  jmp_buf resume;    // where it waits while suspended
  bool started = false;
  const char* barrier_site = "";  // the __syncthreads it waits at ("file:line")
  ThreadCoordinates coordinates;
  FiberState state = FiberState::kRunnable;
  int lane = 0, warp = 0;
};

// One block being run on this OS thread.
struct BlockRun {
  std::vector<Fiber> fibers;
  jmp_buf scheduler;
  const std::function<void()>* body = nullptr;
  Fiber* current = nullptr;
  std::vector<int64_t> exchange;  // [warps, 32]: what each lane published in the current warp collective
};

thread_local BlockRun* running_block = nullptr;
thread_local std::string last_failure;
std::mutex launch_mutex;  // launches are serialised: `__shared__` statics are one copy per kernel

BlockRun& Block() { return *running_block; }

// Suspends the calling fiber (in `state`) and returns to the scheduler; returns when the scheduler resumes it.
// Never inlined, as Resume.
__attribute__((noinline)) void SwitchToScheduler(FiberState state) {
  BlockRun& block = Block();
  Fiber* self = block.current;
  self->state = state;
  if (_setjmp(self->resume) == 0) {
    StartSwitch(scheduler_stack.bottom, scheduler_stack.size);
    Jump(block.scheduler);
  }
  FinishSwitch(nullptr);
}

// Runs `fiber` until it next suspends. Never inlined: the _setjmp stays in a frame of its own, so no caller's
// local lives across the jump back.
__attribute__((noinline)) void Resume(BlockRun& block, Fiber& fiber) {
  block.current = &fiber;
  if (_setjmp(block.scheduler) != 0) {
    FinishSwitch(nullptr);
    return;
  }
  StartSwitch(fiber.stack, kStackBytes);
  if (!fiber.started) {
    fiber.started = true;
    setcontext(&fiber.start);
  }
  Jump(fiber.resume);
}

// A fiber's life: the kernel body once per block of the launch (the scheduler resumes it for each block).
void FiberMain() {
  FinishSwitch(&scheduler_stack);  // the first entry learns the scheduler's stack
  for (;;) {
    (*Block().body)();
    SwitchToScheduler(FiberState::kExited);
  }
}

// Suspends the calling thread until the scheduler releases the barrier it waits at.
void Wait(FiberState barrier) { SwitchToScheduler(barrier); }

std::string DescribeStates(const BlockRun& block) {
  int runnable = 0, at_block = 0, at_warp = 0, exited = 0;
  for (const Fiber& f : block.fibers) {
    switch (f.state) {
      case FiberState::kRunnable: ++runnable; break;
      case FiberState::kAtBlockBarrier: ++at_block; break;
      case FiberState::kAtWarpBarrier: ++at_warp; break;
      case FiberState::kExited: ++exited; break;
    }
  }
  std::set<std::string> sites;
  for (const Fiber& f : block.fibers) {
    if (f.state == FiberState::kAtBlockBarrier) sites.insert(f.barrier_site);
  }
  return absl::StrCat(at_block, " threads at __syncthreads (", absl::StrJoin(sites, ", "), "), ", at_warp, " at a warp collective, ", exited, " exited");
}

// Releases every barrier whose participants have all arrived; false when none could be.
bool ReleaseBarriers(BlockRun& block) {
  bool released = false;
  const int warps = static_cast<int>((block.fibers.size() + kWarpSize - 1) / kWarpSize);
  for (int w = 0; w < warps; ++w) {
    const size_t begin = static_cast<size_t>(w) * kWarpSize;
    const size_t end = std::min(block.fibers.size(), begin + kWarpSize);
    bool all_arrived = true, any_waiting = false;
    for (size_t i = begin; i < end; ++i) {
      const FiberState s = block.fibers[i].state;
      if (s == FiberState::kAtWarpBarrier) any_waiting = true;
      if (s != FiberState::kAtWarpBarrier && s != FiberState::kExited) all_arrived = false;
    }
    if (any_waiting && all_arrived) {
      for (size_t i = begin; i < end; ++i) {
        if (block.fibers[i].state == FiberState::kAtWarpBarrier) block.fibers[i].state = FiberState::kRunnable;
      }
      released = true;
    }
  }
  if (released) return true;
  bool all_at_block_barrier = true, any_waiting = false;
  for (const Fiber& f : block.fibers) {
    if (f.state == FiberState::kAtBlockBarrier) any_waiting = true;
    if (f.state != FiberState::kAtBlockBarrier && f.state != FiberState::kExited) all_at_block_barrier = false;
  }
  if (!any_waiting || !all_at_block_barrier) return false;
  // Threads waiting at different __syncthreads calls: divergent control flow, undefined on the hardware.
  const char* site = nullptr;
  for (const Fiber& f : block.fibers) {
    if (f.state != FiberState::kAtBlockBarrier) continue;
    if (site != nullptr && std::strcmp(f.barrier_site, site) != 0) return false;
    site = f.barrier_site;
  }
  for (Fiber& f : block.fibers) {
    if (f.state == FiberState::kAtBlockBarrier) f.state = FiberState::kRunnable;
  }
  return true;
}

// Runs one block to completion; an error when its threads deadlock at barriers.
std::string RunBlock(BlockRun& block) {
  for (;;) {
    bool ran = false;
    for (Fiber& f : block.fibers) {
      if (f.state != FiberState::kRunnable) continue;
      Resume(block, f);
      ran = true;
    }
    if (ran) continue;
    bool all_exited = true;
    for (const Fiber& f : block.fibers) all_exited = all_exited && f.state == FiberState::kExited;
    if (all_exited) return "";
    if (!ReleaseBarriers(block)) return absl::StrCat("deadlock: ", DescribeStates(block));
  }
}

}  // namespace

const ThreadCoordinates& Current() { return Block().current->coordinates; }

int LaneId() { return Block().current->lane; }

void SyncThreads(const char* site) {
  Block().current->barrier_site = site;
  Wait(FiberState::kAtBlockBarrier);
}

void SyncWarp() { Wait(FiberState::kAtWarpBarrier); }

int64_t ExchangeInt64(int64_t value, int source_lane) {
  BlockRun& block = Block();
  const Fiber& self = *block.current;
  int64_t* slots = block.exchange.data() + static_cast<size_t>(self.warp) * kWarpSize;
  slots[self.lane] = value;
  Wait(FiberState::kAtWarpBarrier);  // every live lane has published
  const int64_t result = slots[source_lane & (kWarpSize - 1)];
  Wait(FiberState::kAtWarpBarrier);  // every live lane has read before the next collective overwrites
  return result;
}

float ExchangeFloat(float value, int source_lane) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(value));
  const int64_t result = ExchangeInt64(bits, source_lane);
  float out;
  std::memcpy(&out, &result, sizeof(out));
  return out;
}

void RunGrid(const char* kernel_name, dim3 grid, dim3 block_dim, size_t dynamic_shared_bytes,
             const std::function<void()>& body) {
  std::lock_guard<std::mutex> lock(launch_mutex);
  const size_t threads = static_cast<size_t>(block_dim.x) * block_dim.y * block_dim.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || dynamic_shared_bytes > 0) {
    RecordFailure(absl::StrCat(kernel_name, ": invalid launch (", grid.x, "x", grid.y, "x", grid.z, " blocks of ",
                               block_dim.x, "x", block_dim.y, "x", block_dim.z, " threads, ", dynamic_shared_bytes,
                               " dynamic shared bytes; the simulator takes none)"));
    return;
  }
  // The fibers' stacks, kept from launch to launch (allocating and faulting in fresh ones each launch cost more
  // than the kernels).
  static std::unique_ptr<char[]> stacks;
  static size_t stack_count = 0;
  if (stack_count < threads) {
    stacks.reset(new char[threads * kStackBytes]);
    stack_count = threads;
  }
  ForgetStackContents(stacks.get(), threads * kStackBytes);  // frames of the last launch's fibers
  BlockRun block;
  block.body = &body;
  block.fibers.resize(threads);
  block.exchange.assign((threads + kWarpSize - 1) / kWarpSize * kWarpSize, 0);
  for (size_t i = 0; i < threads; ++i) {
    Fiber& f = block.fibers[i];
    getcontext(&f.start);
    f.stack = stacks.get() + i * kStackBytes;
    f.start.uc_stack.ss_sp = f.stack;
    f.start.uc_stack.ss_size = kStackBytes;
    f.start.uc_link = nullptr;  // FiberMain never returns
    makecontext(&f.start, FiberMain, 0);
  }
  running_block = &block;
  for (unsigned bz = 0; bz < grid.z; ++bz) {
    for (unsigned by = 0; by < grid.y; ++by) {
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        for (size_t i = 0; i < threads; ++i) {
          Fiber& f = block.fibers[i];
          f.state = FiberState::kRunnable;
          f.lane = static_cast<int>(i % kWarpSize);
          f.warp = static_cast<int>(i / kWarpSize);
          f.coordinates.block_idx = uint3{bx, by, bz};
          f.coordinates.thread_idx = uint3{static_cast<unsigned>(i % block_dim.x),
                                           static_cast<unsigned>(i / block_dim.x % block_dim.y),
                                           static_cast<unsigned>(i / (block_dim.x * block_dim.y))};
          f.coordinates.block_dim = block_dim;
          f.coordinates.grid_dim = grid;
        }
        const std::string error = RunBlock(block);
        if (!error.empty()) {
          running_block = nullptr;
          RecordFailure(absl::StrCat(kernel_name, " block (", bx, ",", by, ",", bz, "): ", error));
          return;
        }
      }
    }
  }
  running_block = nullptr;
}

void RecordFailure(const std::string& message) {
  if (last_failure.empty()) last_failure = message;
}

std::string TakeFailure() {
  std::string failure;
  failure.swap(last_failure);
  return failure;
}

}  // namespace simt

cudaError_t cudaGetLastError() {
  return simt::TakeFailure().empty() ? cudaSuccess : cudaErrorLaunchFailure;
}

const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "a simulated kernel launch failed (simt::TakeFailure says why)";
}
