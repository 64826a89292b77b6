#include "client/cli/http_completion.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

json CompletionBody(const std::string& model, const arach::v1::GenerateRequest& request) {
  json body = {{"model", model},
               {"prompt", json(std::vector<int32_t>(request.token_ids().ids().begin(), request.token_ids().ids().end()))},
               {"max_tokens", request.max_tokens()},
               {"ignore_eos", request.ignore_eos()},
               {"temperature", request.sampling().temperature()},
               {"stream", true}};
  const arach::v1::VariantSpec& v = request.variant();
  if (v.has_arach()) body["arach"] = v.arach();
  if (v.has_skip()) body["skip"] = v.skip();
  if (v.has_arach_offset()) body["arach_offset"] = v.arach_offset();
  return body;
}

}  // namespace

std::string StreamHttpCompletion(const std::string& address, const std::string& model,
                                 const arach::v1::GenerateRequest& request, StreamTimer& timer) {
  httplib::Client client(absl::StrCat("http://", address));
  client.set_read_timeout(600, 0);
  std::string error;
  std::string buffer;
  bool done = false;
  int status = 0;
  httplib::Request http;
  http.method = "POST";
  http.path = "/v1/completions";
  http.body = CompletionBody(model, request).dump();
  http.set_header("Content-Type", "application/json");
  http.response_handler = [&](const httplib::Response& response) {
    status = response.status;
    return true;
  };
  http.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    buffer.append(data, length);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;  // keep-alive comments
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      const json chunk = json::parse(payload, nullptr, false);
      if (chunk.is_discarded() || chunk.contains("error")) {
        error = "stream error";
        return false;
      }
      // One event per engine step: a token (or a few, on the step that ends a prompt).
      if (!chunk["choices"].empty() && chunk["choices"][0]["finish_reason"].is_null()) timer.OnTokens(1);
    }
    return true;
  };
  const httplib::Result result = client.send(http);
  if (!error.empty()) return error;
  if (status != 200 && status != 0) return absl::StrCat("http ", status);
  if (!result) return "http connection";
  return done ? "" : "stream cut short";
}

}  // namespace arach::client
