// A streamed answer of the OpenAI HTTP API (server-sent events): POSTs a JSON body (or GETs) and hands each `data:`
// payload to the caller as it arrives (keep-alive comments skipped; "[DONE]" passed on as it is). The one
// reader of our event streams, for arach-cli bench --http and the end-to-end tests alike.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <string_view>

namespace arach::client {

// Splits bytes into events (separated by a blank line) and passes on their `data: ` payloads (named events' too:
// the Responses API's; an event of several data lines passes them joined by newlines).
class EventStreamReader {
 public:
  // Feeds the next bytes; calls `on_data` for each complete data event. Returns false as soon as
  // `on_data` does (the caller hangs up).
  bool Feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_data);

 private:
  std::string buffer_;
};

struct EventStreamAnswer {
  int status = 0;            // HTTP status; 0 when no answer came
  httplib::Headers headers;
  bool connected = false;    // a response (of any status) was read
};

// `method` (GET, POST) http://`address``path` with `headers` (e.g. Authorization) and `body` (JSON; none when empty)
// and read the answer's events into `on_data` (which may return false to hang up). `read_timeout_seconds` bounds each
// wait for bytes.
EventStreamAnswer SendForEvents(const std::string& address, const std::string& method, const std::string& path,
                                const std::string& body, const std::function<bool(const std::string&)>& on_data,
                                int read_timeout_seconds = 600, const httplib::Headers& headers = {});
// SendForEvents with POST.
EventStreamAnswer PostForEvents(const std::string& address, const std::string& path, const std::string& body,
                                const std::function<bool(const std::string&)>& on_data, int read_timeout_seconds = 600,
                                const httplib::Headers& headers = {});

}  // namespace arach::client
