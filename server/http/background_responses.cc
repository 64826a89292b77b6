#include "server/http/background_responses.h"

#include "absl/strings/str_cat.h"

namespace arach::server::http {

BackgroundResponses::~BackgroundResponses() { Stop(); }

absl::Status BackgroundResponses::Start(const std::string& id, const std::string& owner, std::shared_ptr<GenerationCall> call,
                                        const std::function<void()>& accepted, std::function<void()> finish) {
  std::lock_guard<std::mutex> lock(mutex_);
  JoinEndedLocked();
  if (stopped_) return absl::UnavailableError("the server is stopping");
  const std::string key = KeyOf(id, owner);
  if (running_.contains(key)) return DuplicateError(id);
  accepted();
  Running& running = running_[key];
  running.call = std::move(call);
  // (The thread takes the lock only after this returns: its entry is complete by then.)
  running.thread = std::thread([this, key, finish = std::move(finish)] {
    finish();
    Finished(key);
  });
  CountLocked();
  return absl::OkStatus();
}

void BackgroundResponses::Finished(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = running_.find(key);
    ended_.push_back(std::move(it->second.thread));  // joined by the next Start or Stop
    running_.erase(it);
    CountLocked();
  }
  changed_.notify_all();
}

bool BackgroundResponses::CancelAndWait(const std::string& id, const std::string& owner) {
  std::unique_lock<std::mutex> lock(mutex_);
  const std::string key = KeyOf(id, owner);
  auto it = running_.find(key);
  if (it == running_.end()) return false;
  it->second.call->Cancel();
  changed_.wait(lock, [&] { return !running_.contains(key); });
  return true;
}

absl::Status BackgroundResponses::DuplicateError(const std::string& id) {
  return absl::InvalidArgumentError(
      absl::StrCat("a background response '", id, "' of this key is still running: its request id (x-request-id) was used again"));
}

bool BackgroundResponses::IsRunning(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_.contains(KeyOf(id, owner));
}

void BackgroundResponses::Stop() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopped_ = true;
  for (auto& [key, running] : running_) running.call->Cancel();
  changed_.wait(lock, [&] { return running_.empty(); });
  JoinEndedLocked();
}

void BackgroundResponses::CountLocked() const {
  if (metrics_ != nullptr) metrics_->SetBackgroundResponses(static_cast<int64_t>(running_.size()));
}

void BackgroundResponses::JoinEndedLocked() {
  // Each of these threads has returned from its work or is about to (it only left Finished): joining is brief.
  for (std::thread& thread : ended_) thread.join();
  ended_.clear();
}

}  // namespace arach::server::http
