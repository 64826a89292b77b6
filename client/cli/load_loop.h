// Closed-loop load: `concurrency` workers run requests 0 .. count-1, each taking the next index.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace arach::client {

template <typename Fn>
void RunClosedLoop(int count, int concurrency, const Fn& run_one) {
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < std::max(1, concurrency); ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) run_one(i);
    });
  }
  for (std::thread& t : workers) t.join();
}

}  // namespace arach::client
