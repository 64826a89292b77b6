// Where the server is in its life (loading -> serving -> lame duck -> draining) and how many calls are in
// flight, so that a drain can wait for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace arach::server {

// kLameDuck: a drain has begun; readiness is false (HTTP /ready 503, gRPC health NOT_SERVING) so that proxies
// and Kubernetes stop sending, but calls are still admitted until they have had time to notice
// (--drain_announce_ms). kDraining: new calls are refused; those in flight finish.
enum class Phase { kLoading, kServing, kLameDuck, kDraining };

class ServingState {
 public:
  // Admits a new call when serving or a lame duck (and counts it); false while loading or draining.
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
