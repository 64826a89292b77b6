#include "server/http/elastic_thread_pool.h"

#include <algorithm>
#include <utility>

namespace arach::server::http {

ElasticThreadPool::ElasticThreadPool(int min_threads, int max_threads, std::chrono::milliseconds idle_timeout)
    : min_threads_(std::max(0, min_threads)), max_threads_(std::max({1, min_threads, max_threads})), idle_timeout_(idle_timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < min_threads_; ++i) StartThreadLocked();
}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

void ElasticThreadPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    JoinEndedLocked();
    jobs_.push_back(std::move(job));
    // Every queued job needs a thread of its own: start one for each the idle threads cannot take.
    if (static_cast<int>(jobs_.size()) > idle_ && static_cast<int>(threads_.size()) < max_threads_) StartThreadLocked();
  }
  work_arrived_.notify_one();
}

void ElasticThreadPool::shutdown() {
  std::map<int, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    threads.swap(threads_);
    ended_.clear();
  }
  work_arrived_.notify_all();
  for (auto& [id, thread] : threads) thread.join();
}

int ElasticThreadPool::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return RunningLocked();
}

int ElasticThreadPool::busy_threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return RunningLocked() - idle_;
}

int ElasticThreadPool::RunningLocked() const { return static_cast<int>(threads_.size() - ended_.size()); }

void ElasticThreadPool::StartThreadLocked() {
  const int id = next_id_++;
  threads_.emplace(id, std::thread([this, id] { Work(id); }));
}

void ElasticThreadPool::JoinEndedLocked() {
  // An ended thread has left Work() but for returning; joining it here is brief.
  for (int id : ended_) {
    const auto it = threads_.find(id);
    if (it == threads_.end()) continue;
    it->second.join();
    threads_.erase(it);
  }
  ended_.clear();
}

void ElasticThreadPool::Work(int id) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    const bool woken = work_arrived_.wait_for(lock, idle_timeout_, [this] { return !jobs_.empty() || shutting_down_; });
    --idle_;
    if (jobs_.empty()) {
      if (shutting_down_) return;
      // Idle for the whole timeout: threads beyond the warm ones end (ended_ tells enqueue to join this one).
      if (!woken && RunningLocked() > min_threads_) {
        ended_.push_back(id);
        return;
      }
      continue;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace arach::server::http
