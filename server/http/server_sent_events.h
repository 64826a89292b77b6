// A text/event-stream response body (OpenAI's streaming): `data: <json>` events, comment lines that keep
// an idle connection alive and tell a dead one apart, and `data: [DONE]` at the end; the Responses API's
// streams name each event (`event: <type>`) and end without [DONE]. The events go to a client's connection, or
// into an EventLog from which clients read them later (ReplayServerSentEvents).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "server/event_log.h"

namespace arach::server::http {

// How long a stream may stay silent before a keep-alive comment goes out (a write to a client that
// has gone away fails, which cancels its request).
inline constexpr std::chrono::milliseconds kServerSentEventsKeepAlive{2000};

class ServerSentEvents {
 public:
  explicit ServerSentEvents(httplib::DataSink& sink) : sink_(&sink) {}
  // Records the events into `log` instead (keep-alives are not recorded; the end closes it).
  explicit ServerSentEvents(EventLog& log) : log_(&log) {}

  // Each returns false when the client is gone (never for a log).
  bool Data(const std::string& payload);  // "data: PAYLOAD\n\n"
  bool KeepAlive();                       // ": keep-alive\n\n"
  bool Done();                            // "data: [DONE]\n\n", and the body ends
  bool Event(const std::string& name, const std::string& payload);  // "event: NAME\ndata: PAYLOAD\n\n"
  bool End();                             // the body ends
  bool ended() const { return ended_; }   // Done or End was called

 private:
  bool Write(const std::string& text);
  httplib::DataSink* sink_ = nullptr;
  EventLog* log_ = nullptr;
  bool ended_ = false;
};

// Answers with an event stream: `pump` is called (on the connection's thread) until it calls Done() or
// returns false (the client is gone); `on_end(completed)` is called once afterwards, whatever happened.
void SendServerSentEvents(httplib::Response& response, std::function<bool(ServerSentEvents&)> pump,
                          std::function<void(bool completed)> on_end);

// Answers with the events of `log` from index `first` on, as they were recorded, then those still to come as they
// come (a keep-alive while none does), until the log is closed or the client goes away.
void ReplayServerSentEvents(httplib::Response& response, std::shared_ptr<const EventLog> log, size_t first);

}  // namespace arach::server::http
