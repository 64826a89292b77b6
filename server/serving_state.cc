#include "server/serving_state.h"

namespace arach::server {

bool ServingState::TryEnter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_ != Phase::kServing && phase_ != Phase::kLameDuck) return false;
  ++in_flight_;
  return true;
}

void ServingState::Leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--in_flight_ == 0) idle_.notify_all();
}

void ServingState::SetPhase(Phase phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = phase;
}

Phase ServingState::phase() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return phase_;
}

int ServingState::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

bool ServingState::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return in_flight_ == 0; });
}

}  // namespace arach::server
