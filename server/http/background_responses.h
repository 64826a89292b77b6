// The Responses API's background responses (`background: true`): each runs on a thread of its own from the moment
// it is accepted (answered at once, `status: "queued"`) until its final state is in the response store, and the key
// that made it may cancel it. One per HTTP server; Stop cancels and joins whatever still runs (serve.cc shuts the
// engine down first, which ends every call).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "server/http/generation_call.h"
#include "server/metrics.h"

namespace arach::server::http {

class BackgroundResponses {
 public:
  // `metrics` (may be null) has arach_responses_background_running follow the count.
  explicit BackgroundResponses(ServerMetrics* metrics) : metrics_(metrics) {}
  BackgroundResponses(const BackgroundResponses&) = delete;
  BackgroundResponses& operator=(const BackgroundResponses&) = delete;
  ~BackgroundResponses();  // Stop()

  // Calls `accepted` (which stores the response as queued), then runs `finish` (which waits for `call`'s answer and
  // stores the response's later states) on a thread of its own: what `finish` stores comes after what `accepted`
  // stored. Until `finish` returns, `owner` may cancel `call` under `id`. INVALID_ARGUMENT when `owner` has a
  // response `id` running (a request id used twice), UNAVAILABLE after Stop: neither function is called then.
  absl::Status Start(const std::string& id, const std::string& owner, std::shared_ptr<GenerationCall> call,
                     const std::function<void()>& accepted, std::function<void()> finish);
  // Cancels `owner`'s running response `id` and waits until its `finish` has returned (its final state stored):
  // whether one was running.
  bool CancelAndWait(const std::string& id, const std::string& owner);
  // Whether `owner` has a response `id` running.
  bool IsRunning(const std::string& id, const std::string& owner) const;
  // The refusal of a request whose response id `owner` has running: one home for its words (Start says the same).
  static absl::Status DuplicateError(const std::string& id);
  // Cancels every running response and joins every thread; later Starts are refused.
  void Stop();

 private:
  struct Running {
    std::shared_ptr<GenerationCall> call;
    std::thread thread;
  };
  static std::string KeyOf(const std::string& id, const std::string& owner) { return owner + '\n' + id; }
  void Finished(const std::string& key);
  void JoinEndedLocked();
  void CountLocked() const;  // the gauge follows running_

  ServerMetrics* const metrics_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Running> running_;  // by KeyOf(id, owner)
  std::vector<std::thread> ended_;          // threads whose finish returned, to be joined
  bool stopped_ = false;
};

}  // namespace arach::server::http
