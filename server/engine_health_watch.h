// Watches Engine::Health from a thread of its own and says when it changes: the gRPC health service follows it
// (a wedged or failing engine is NOT_SERVING, so that clients and proxies go elsewhere) and the server's log gets a
// line. HTTP's probes ask Engine::Health themselves. Stop it before the drain takes over the serving status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "engine/engine.h"

namespace arach::server {

class EngineHealthWatch {
 public:
  // Checks `engine` every `period`; `on_change` gets each new state (not the first, healthy one) on the watch's thread.
  EngineHealthWatch(const Engine& engine, std::chrono::milliseconds period, std::function<void(const absl::Status&)> on_change);
  ~EngineHealthWatch() { Stop(); }
  EngineHealthWatch(const EngineHealthWatch&) = delete;
  EngineHealthWatch& operator=(const EngineHealthWatch&) = delete;

  // Ends the thread (no call of on_change after it returns).
  void Stop();

 private:
  void Run();

  const Engine& engine_;
  const std::chrono::milliseconds period_;
  const std::function<void(const absl::Status&)> on_change_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace arach::server
