// The events of a streamed answer, recorded as they are produced for readers that come at any time: a streamed
// background response (the Responses API's `background` with `stream`) records its server-sent events here, and
// its first client and any later one (GET /v1/responses/{id}?stream=true&starting_after=N) read them back from
// where they choose, waiting for those still to come. Append-only; closed once the answer has ended.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace arach::server {

class EventLog {
 public:
  struct Event {
    std::string name;     // the event's name ("response.created"); empty for an unnamed data event
    std::string payload;  // its data (JSON text)
  };
  // What a read found: the events from its first on, and whether the log had been closed (no event follows them).
  struct Read {
    std::vector<Event> events;
    bool closed = false;
  };

  EventLog() = default;
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Records the next event (event i of the log is the i-th appended); ignored once closed.
  void Append(std::string name, std::string payload);
  // No event follows; wakes every reader. Idempotent.
  void Close();
  // The events from index `first` on. When there is none yet and the log is open, waits up to `wait` for one (or
  // the close).
  Read ReadFrom(size_t first, std::chrono::milliseconds wait) const;

  size_t size() const;
  // The bytes of the names and payloads recorded (what keeping the log costs, as the response store counts it).
  size_t bytes() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<Event> events_;
  size_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace arach::server
