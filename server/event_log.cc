#include "server/event_log.h"

#include <utility>

namespace arach::server {

void EventLog::Append(std::string name, std::string payload) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    bytes_ += name.size() + payload.size();
    events_.push_back({std::move(name), std::move(payload)});
  }
  changed_.notify_all();
}

void EventLog::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

EventLog::Read EventLog::ReadFrom(size_t first, std::chrono::milliseconds wait) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, wait, [&] { return closed_ || events_.size() > first; });
  Read read;
  if (first < events_.size()) read.events.assign(events_.begin() + static_cast<std::ptrdiff_t>(first), events_.end());
  read.closed = closed_;
  return read;
}

size_t EventLog::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

size_t EventLog::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace arach::server
