#include "client/event_stream.h"

#include "absl/strings/str_cat.h"

namespace arach::client {

bool EventStreamReader::Feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_data) {
  buffer_.append(bytes);
  for (size_t end; (end = buffer_.find("\n\n")) != std::string::npos;) {
    const std::string event = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    if (event.rfind("data: ", 0) != 0) continue;  // a keep-alive comment
    if (!on_data(event.substr(6))) return false;
  }
  return true;
}

EventStreamAnswer PostForEvents(const std::string& address, const std::string& path, const std::string& body,
                                const std::function<bool(const std::string&)>& on_data, int read_timeout_seconds,
                                const httplib::Headers& headers) {
  httplib::Client client(absl::StrCat("http://", address));
  client.set_read_timeout(read_timeout_seconds, 0);
  EventStreamAnswer answer;
  EventStreamReader reader;
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.headers = headers;
  request.set_header("Content-Type", "application/json");
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
