// Where the server is in its life (loading -> serving -> draining) and how many calls are in flight,
// so that a drain can wait for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace arach::server {

enum class Phase { kLoading, kServing, kDraining };

class ServingState {
 public:
  // Admits a new call when serving (and counts it); false while loading or draining.
  bool TryEnter();
  void Leave();
  void SetPhase(Phase phase);
  Phase phase() const;
  int in_flight() const;
  // Waits until no call is in flight or `timeout` passes; true when none is left.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  Phase phase_ = Phase::kLoading;
  int in_flight_ = 0;
};

}  // namespace arach::server
