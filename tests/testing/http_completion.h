// The end-to-end tests' HTTP calls to a server process: any route (Send), a completion answered whole (Complete)
// or streamed as server-sent events (Stream).
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <vector>

#include "client/event_stream.h"
#include "nlohmann/json.hpp"
#include "tests/testing/http_answer.h"
#include "tests/testing/server_process.h"

namespace arach::testing {

inline HttpAnswer Send(const ServerProcess& server, const std::string& method, const std::string& path, const std::string& body = "",
                       httplib::Headers headers = {}) {
  return HttpSend(server.http_address(), method, path, body, headers);
}

inline HttpAnswer Complete(const ServerProcess& server, const nlohmann::json& body, httplib::Headers headers = {}) {
  return Send(server, "POST", "/v1/completions", body.dump(), std::move(headers));
}

// A streamed completion: the `data:` payloads in order ("[DONE]" included). `on_event` may return false to
// hang up.
struct StreamResult {
  int status = 0;
  std::vector<std::string> events;
  httplib::Headers headers;
};
inline StreamResult Stream(const ServerProcess& server, const nlohmann::json& body,
                           const std::function<bool(const std::string&)>& on_event = [](const std::string&) { return true; }) {
  StreamResult out;
  const client::EventStreamAnswer answer =
      client::PostForEvents(server.http_address(), "/v1/completions", body.dump(), [&](const std::string& payload) {
        out.events.push_back(payload);
        return on_event(payload);
      }, /*read_timeout_seconds=*/300);
  out.status = answer.status;
  out.headers = answer.headers;
  return out;
}

}  // namespace arach::testing
