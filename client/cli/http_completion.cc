#include "client/cli/http_completion.h"

#include "absl/strings/str_cat.h"
#include "client/event_stream.h"
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
                                 const arach::v1::GenerateRequest& request, StreamTimer& timer, const std::string& api_key) {
  std::string error;
  bool done = false;
  const EventStreamAnswer answer =
      PostForEvents(address, "/v1/completions", CompletionBody(model, request).dump(), [&](const std::string& payload) {
        if (payload == "[DONE]") {
          done = true;
          return true;
        }
        const json chunk = json::parse(payload, nullptr, false);
        if (chunk.is_discarded() || chunk.contains("error")) {
          error = "stream error";
          return false;
        }
        // One event per engine step: a token (or a few, on the step that ends a prompt).
        if (!chunk["choices"].empty() && chunk["choices"][0]["finish_reason"].is_null()) timer.OnTokens(1);
        return true;
      }, /*read_timeout_seconds=*/600, api_key.empty() ? httplib::Headers{} : httplib::Headers{{"Authorization", "Bearer " + api_key}});
  if (!error.empty()) return error;
  if (answer.status != 200 && answer.status != 0) return absl::StrCat("http ", answer.status);
  if (!answer.connected) return "http connection";
  return done ? "" : "stream cut short";
}

}  // namespace arach::client
