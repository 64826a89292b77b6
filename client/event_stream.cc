#include "client/event_stream.h"

#include "absl/strings/str_cat.h"

namespace arach::client {

bool EventStreamReader::Feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_data) {
  buffer_.append(bytes);
  for (size_t end; (end = buffer_.find("\n\n")) != std::string::npos;) {
    const std::string event = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    // Its data lines, joined by newlines (a named event's `event: NAME` line before them is skipped).
    std::string data;
    bool has_data = false;
    for (size_t line_start = 0; line_start <= event.size();) {
      size_t line_end = event.find('\n', line_start);
      if (line_end == std::string::npos) line_end = event.size();
      const std::string_view line(event.data() + line_start, line_end - line_start);
      if (line.substr(0, 6) == "data: ") {
        if (has_data) data += '\n';
        data.append(line.substr(6));
        has_data = true;
      }
      line_start = line_end + 1;
    }
    if (!has_data) continue;  // a keep-alive comment
    if (!on_data(data)) return false;
  }
  return true;
}

EventStreamAnswer PostForEvents(const std::string& address, const std::string& path, const std::string& body,
                                const std::function<bool(const std::string&)>& on_data, int read_timeout_seconds,
                                const httplib::Headers& headers) {
  return SendForEvents(address, "POST", path, body, on_data, read_timeout_seconds, headers);
}

EventStreamAnswer SendForEvents(const std::string& address, const std::string& method, const std::string& path,
                                const std::string& body, const std::function<bool(const std::string&)>& on_data,
                                int read_timeout_seconds, const httplib::Headers& headers) {
  httplib::Client client(absl::StrCat("http://", address));
  client.set_read_timeout(read_timeout_seconds, 0);
  EventStreamAnswer answer;
  EventStreamReader reader;
  httplib::Request request;
  request.method = method;
  request.path = path;
  request.body = body;
  request.headers = headers;
  if (!body.empty()) request.set_header("Content-Type", "application/json");
  request.response_handler = [&](const httplib::Response& response) {
    answer.status = response.status;
    answer.headers = response.headers;
    answer.connected = true;
    return true;
  };
  request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    return reader.Feed(std::string_view(data, length), on_data);
  };
  client.send(request);
  return answer;
}

}  // namespace arach::client
