#include "server/http/elastic_thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"

namespace arach::server::http {
namespace {

using std::chrono::milliseconds;

// Jobs that block until released, as connections held by streams do.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    --waiting_;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // True once `n` jobs wait at the gate at the same time (within a generous bound for a loaded machine).
  bool Reaches(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return waiting_ >= n; });
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

bool Eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

TEST(ElasticThreadPool, StartsAThreadPerHeldJobUpToItsMaximumThenQueues) {
  ElasticThreadPool pool(/*min_threads=*/1, /*max_threads=*/6, milliseconds(60000));
  EXPECT_EQ(pool.threads(), 1);
  Gate gate;
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) pool.enqueue([&] { gate.Wait(); ++done; });
  ASSERT_TRUE(gate.Reaches(6)) << "all six threads run a job at once; only " << gate.waiting();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(gate.waiting(), 6) << "the seventh and eighth jobs wait for a thread";
  EXPECT_EQ(pool.threads(), 6);
  EXPECT_EQ(pool.busy_threads(), 6);
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return done == 8; }));
}

TEST(ElasticThreadPool, ThreadsBeyondTheWarmOnesEndWhenIdle) {
  ElasticThreadPool pool(/*min_threads=*/2, /*max_threads=*/10, milliseconds(30));
  Gate gate;
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) pool.enqueue([&] { gate.Wait(); ++done; });
  ASSERT_TRUE(gate.Reaches(10));
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return done == 10; }));
  EXPECT_TRUE(Eventually([&] { return pool.threads() == 2; })) << pool.threads() << " threads after the idle timeout";
  EXPECT_EQ(pool.busy_threads(), 0);
  // It grows again, and the threads that ended are joined on the way.
  Gate again;
  for (int i = 0; i < 5; ++i) pool.enqueue([&] { again.Wait(); ++done; });
  ASSERT_TRUE(again.Reaches(5));
  again.Open();
  EXPECT_TRUE(Eventually([&] { return done == 15; }));
}

TEST(ElasticThreadPool, ShutdownRunsTheQueuedJobsAndJoins) {
  std::atomic<int> done{0};
  {
    ElasticThreadPool pool(/*min_threads=*/0, /*max_threads=*/2, milliseconds(60000));
    for (int i = 0; i < 20; ++i) {
      pool.enqueue([&] {
        std::this_thread::sleep_for(milliseconds(1));
        ++done;
      });
    }
    pool.shutdown();
    EXPECT_EQ(done.load(), 20);
    EXPECT_EQ(pool.threads(), 0);
  }  // the destructor after shutdown() is a no-op
  EXPECT_EQ(done.load(), 20);
}

}  // namespace
}  // namespace arach::server::http
