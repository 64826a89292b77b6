#include "server/engine_health_watch.h"

namespace arach::server {

EngineHealthWatch::EngineHealthWatch(const Engine& engine, std::chrono::milliseconds period,
                                     std::function<void(const absl::Status&)> on_change)
    : engine_(engine), period_(period), on_change_(std::move(on_change)) {
  thread_ = std::thread([this] { Run(); });
}

void EngineHealthWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineHealthWatch::Run() {
  bool healthy = true;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, period_, [this] { return stopping_; })) {
    lock.unlock();
    const absl::Status health = engine_.Health();
    if (health.ok() != healthy) {
      healthy = health.ok();
      on_change_(health);
    }
    lock.lock();
  }
}

}  // namespace arach::server
