#include "server/http/server_sent_events.h"

#include <memory>

namespace arach::server::http {

bool ServerSentEvents::Write(const std::string& text) { return sink_.write(text.data(), text.size()); }

bool ServerSentEvents::Data(const std::string& payload) { return Write("data: " + payload + "\n\n"); }

bool ServerSentEvents::KeepAlive() { return Write(": keep-alive\n\n"); }

bool ServerSentEvents::Done() { return Write("data: [DONE]\n\n") && End(); }

bool ServerSentEvents::Event(const std::string& name, const std::string& payload) {
  return Write("event: " + name + "\ndata: " + payload + "\n\n");
}

bool ServerSentEvents::End() {
  sink_.done();
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

}  // namespace arach::server::http
