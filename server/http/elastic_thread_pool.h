// The threads that serve HTTP connections (cpp-httplib's TaskQueue): cpp-httplib serves a connection on one
// thread from accept to close, so a streamed completion, or a keep-alive connection waiting for its next request,
// holds a thread for as long as it lasts. httplib's own ThreadPool starts a fixed number of threads up front and
// queues every connection beyond them, unbounded and unseen: with more streams open than threads, new requests
// (a /ready probe among them) waited there without an answer while the engine had room, and the engine's queue
// limit never answered 429. This pool starts a thread whenever a connection arrives and none is idle, up to
// `max_threads`, and lets threads beyond `min_threads` end after `idle_timeout` without work.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace arach::server::http {

class ElasticThreadPool : public httplib::TaskQueue {
 public:
  ElasticThreadPool(int min_threads, int max_threads, std::chrono::milliseconds idle_timeout);
  ~ElasticThreadPool() override;  // shutdown()

  // Runs `job` on an idle thread, on a new one when none is idle and fewer than max_threads run, else queues it.
  void enqueue(std::function<void()> job) override;
  // Runs the queued jobs, then joins every thread (httplib calls it when the server stops).
  void shutdown() override;

  int threads() const;       // threads running now
  int busy_threads() const;  // of them, those running a job

 private:
  void Work(int id);
  void StartThreadLocked();
  void JoinEndedLocked();
  int RunningLocked() const;  // threads not yet ended

  const int min_threads_;
  const int max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable work_arrived_;
  std::deque<std::function<void()>> jobs_;
  std::map<int, std::thread> threads_;  // id -> thread, until joined
  std::vector<int> ended_;              // ids of threads that left their loop, to join
  int next_id_ = 0;
  int idle_ = 0;                        // threads waiting for a job
  bool shutting_down_ = false;
};

}  // namespace arach::server::http
