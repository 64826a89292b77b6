#include "server/http/server_sent_events.h"

#include <memory>

namespace arach::server::http {

bool ServerSentEvents::Write(const std::string& text) { return sink_->write(text.data(), text.size()); }

bool ServerSentEvents::Data(const std::string& payload) {
  if (log_ != nullptr) {
    log_->Append("", payload);
    return true;
  }
  return Write("data: " + payload + "\n\n");
}

bool ServerSentEvents::KeepAlive() { return log_ != nullptr || Write(": keep-alive\n\n"); }

bool ServerSentEvents::Done() { return Data("[DONE]") && End(); }

bool ServerSentEvents::Event(const std::string& name, const std::string& payload) {
  if (log_ != nullptr) {
    log_->Append(name, payload);
    return true;
  }
  return Write("event: " + name + "\ndata: " + payload + "\n\n");
}

bool ServerSentEvents::End() {
  ended_ = true;
  if (log_ != nullptr) {
    log_->Close();
  } else {
    sink_->done();
  }
  return true;
}

void SendServerSentEvents(httplib::Response& response, std::function<bool(ServerSentEvents&)> pump,
                          std::function<void(bool completed)> on_end) {
  response.set_header("Cache-Control", "no-cache");
  response.set_header("X-Accel-Buffering", "no");  // proxies must not hold the events back
  response.set_chunked_content_provider(
      "text/event-stream",
      [pump = std::move(pump)](size_t /*offset*/, httplib::DataSink& sink) {
        ServerSentEvents events(sink);
        return pump(events);
      },
      [on_end = std::move(on_end)](bool completed) { on_end(completed); });
}

void ReplayServerSentEvents(httplib::Response& response, std::shared_ptr<const EventLog> log, size_t first) {
  auto next = std::make_shared<size_t>(first);  // the index of the next event to write (the provider is copied)
  SendServerSentEvents(
      response,
      [log = std::move(log), next](ServerSentEvents& events) {
        EventLog::Read read = log->ReadFrom(*next, kServerSentEventsKeepAlive);
        if (read.events.empty() && !read.closed) return events.KeepAlive();
        for (const EventLog::Event& event : read.events) {
          if (!(event.name.empty() ? events.Data(event.payload) : events.Event(event.name, event.payload))) return false;
          ++*next;
        }
        return !read.closed || events.End();
      },
      [](bool /*completed*/) {});
}

}  // namespace arach::server::http
