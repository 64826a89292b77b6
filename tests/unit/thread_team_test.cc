// The CPU backend's thread team (engine/backend/cpu/cpu_parallel.h): every chunk of every loop runs exactly
// once, chunks are claimed dynamically (a stalled chunk does not hold the others back), the thread index is a
// valid per-thread slot, and the team starts and stops cleanly. Also run under TSan (scripts/sanitize.sh).
#include "engine/backend/cpu/cpu_parallel.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <functional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace arach::cpu {
namespace {

TEST(ThreadTeam, EveryItemRunsOnceInChunksOfTheGrain) {
  ThreadTeam team(4);
  std::mt19937 rng(7);
  for (int loop = 0; loop < 2000; ++loop) {
    const int64_t count = std::uniform_int_distribution<int64_t>(0, 300)(rng);
    const int64_t grain = std::uniform_int_distribution<int64_t>(1, 7)(rng);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> chunks;
    team.ForChunks(count, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) runs[i].fetch_add(1);
      std::lock_guard<std::mutex> lock(mutex);
      chunks.emplace(begin, end);
    });
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << "loop " << loop << ", item " << i;
    int64_t expected_begin = 0;
    for (const auto& [begin, end] : chunks) {
      ASSERT_EQ(begin, expected_begin) << "loop " << loop;
      ASSERT_EQ(end, std::min(count, begin + grain)) << "loop " << loop;
      expected_begin = end;
    }
    ASSERT_EQ(expected_begin, count);
  }
}

TEST(ThreadTeam, ThreadIndexNamesAPrivateSlot) {
  ThreadTeam team(3);
  // Plain (non-atomic) per-thread counters: two threads sharing an index would race (TSan reports it).
  std::vector<int64_t> per_thread(static_cast<size_t>(team.threads()), 0);
  for (int loop = 0; loop < 500; ++loop) {
    team.ForEach(97, [&](int64_t i, int thread) {
      ASSERT_GE(thread, 0);
      ASSERT_LT(thread, team.threads());
      per_thread[thread] += i;
    });
  }
  int64_t total = 0;
  for (int64_t sum : per_thread) total += sum;
  EXPECT_EQ(total, 500 * (96 * 97 / 2));
}

TEST(ThreadTeam, OthersTakeOverWhileAChunkStalls) {
  ThreadTeam team(2);
  constexpr int64_t kChunks = 16;
  std::atomic<int64_t> done{0};
  std::atomic<bool> stalled_chunk_saw_all{false};
  team.ForChunks(kChunks, 1, [&](int64_t begin, int64_t) {
    if (begin == 0) {
      // Chunk 0 waits for every other chunk: with chunks tied to threads (a static partition) the rest of this
      // thread's share would never run.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() < kChunks - 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      stalled_chunk_saw_all = done.load() == kChunks - 1;
    }
    done.fetch_add(1);
  });
  EXPECT_TRUE(stalled_chunk_saw_all.load());
  EXPECT_EQ(done.load(), kChunks);
}

TEST(ThreadTeam, LoopsFromTwoThreadsAtOnceEachRunEveryItemOnce) {
  ThreadTeam team(3);
  constexpr int kLoops = 3000;
  constexpr int64_t kCount = 64;
  auto caller = [&team](std::vector<int>& runs) {
    for (int loop = 0; loop < kLoops; ++loop) {
      std::vector<std::atomic<int>> counts(kCount);
      team.ForChunks(kCount, 3, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) counts[i].fetch_add(1);
      });
      for (int64_t i = 0; i < kCount; ++i) runs[i] += counts[i].load();
    }
  };
  std::vector<int> first(kCount, 0), second(kCount, 0);
  std::thread other(caller, std::ref(second));
  caller(first);
  other.join();
  for (int64_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(first[i], kLoops) << i;
    EXPECT_EQ(second[i], kLoops) << i;
  }
}

TEST(ThreadTeam, ALoopStartedInsideALoopRunsOnItsCaller) {
  ThreadTeam team(2);
  std::atomic<int64_t> inner_items{0};
  team.ForEach(4, [&](int64_t, int) {
    team.ForChunks(10, 1, [&](int64_t begin, int64_t end) { inner_items.fetch_add(end - begin); });
  });
  EXPECT_EQ(inner_items.load(), 40);
}

TEST(ThreadTeam, OneThreadRunsEverythingOnTheCaller) {
  ThreadTeam team(1);
  EXPECT_EQ(team.threads(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  int64_t items = 0;
  team.ForChunks(1000, 10, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    items += end - begin;
  });
  team.ForEach(5, [&](int64_t, int thread) { EXPECT_EQ(thread, 0); });
  EXPECT_EQ(items, 1000);
}

TEST(ThreadTeam, ManyItemsAreGroupedIntoAtMost65535Chunks) {
  ThreadTeam team(2);
  constexpr int64_t kCount = int64_t{1} << 20;
  std::atomic<int64_t> chunks{0}, items{0};
  team.ForChunks(kCount, 1, [&](int64_t begin, int64_t end) {
    chunks.fetch_add(1);
    items.fetch_add(end - begin);
  });
  EXPECT_EQ(items.load(), kCount);
  EXPECT_LE(chunks.load(), 0xffff);
}

TEST(ThreadTeam, StopsWhetherIdleAsleepOrNeverUsed) {
  { ThreadTeam never_used(4); }
  ThreadTeam team(4);
  std::atomic<int> runs{0};
  team.ForEach(8, [&](int64_t, int) { runs.fetch_add(1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers are asleep on the futex now
  team.ForEach(8, [&](int64_t, int) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 16);
}

}  // namespace
}  // namespace arach::cpu
