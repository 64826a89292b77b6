// One answer of the server's HTTP API as the end-to-end tests read it: status, JSON body (or the text when it is
// not JSON), headers; and the plain-HTTP GET / POST that fetch it.
#pragma once

#include <httplib.h>

#include <string>

#include "nlohmann/json.hpp"

namespace arach::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (no connection, a failed TLS handshake)
  nlohmann::json body;
  httplib::Headers headers;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

inline HttpAnswer AnswerOf(const httplib::Result& result) {
  HttpAnswer answer;
  if (!result) return answer;
  answer.status = result->status;
  answer.headers = result->headers;
  answer.body = nlohmann::json::parse(result->body, nullptr, false);
  if (answer.body.is_discarded()) answer.body = result->body;
  return answer;
}

// `method` ("GET", "OPTIONS", "DELETE" or "POST", a JSON body) on http://`address``path`.
inline HttpAnswer HttpSend(const std::string& address, const std::string& method, const std::string& path,
                           const std::string& body = "", const httplib::Headers& headers = {}) {
  httplib::Client client("http://" + address);
  client.set_read_timeout(120, 0);
  if (method == "GET") return AnswerOf(client.Get(path.c_str(), headers));
  if (method == "OPTIONS") return AnswerOf(client.Options(path.c_str(), headers));
  if (method == "DELETE") return AnswerOf(client.Delete(path.c_str(), headers));
  return AnswerOf(client.Post(path.c_str(), headers, body, "application/json"));
}

}  // namespace arach::testing
