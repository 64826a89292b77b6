// One line on stdout per finished request, whatever API it came through, so that a request id seen by a
// client (x-request-id, Finish.request_id) can be found in the server's log:
//   request id=ID api=http route=/v1/completions key=team-a variant=arach status=200 prompt_tokens=12
//           completion_tokens=32 latency_ms=812.4 finish=length lora=-
// (`key`: the API key's name, "open" on a server without keys, "unknown" when no valid key was presented).
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace arach::server {

struct FinishedRequest {
  FinishedRequest(std::string id_in, std::string api_in, std::string route_in, std::string variant_in, int status_in)
      : id(std::move(id_in)), api(std::move(api_in)), route(std::move(route_in)), variant(std::move(variant_in)),
        status(status_in) {}

  std::string id;
  std::string api;      // "grpc" or "http"
  std::string route;    // "Generate", "Score", "/v1/completions", ...
  std::string key = "unknown";  // the API key's name (never its secret)
  std::string variant;  // the metrics label of the variant that served it
  std::string lora;     // the LoRA adapter that served it ("" for the base model or a refused request: "-")
  int status = 0;       // HTTP status, or the gRPC status code
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double seconds = 0;   // arrival -> finish
  std::string finish;   // "stop", "length", "cancelled", "deadline", "error", or "" for a refused request
};

class RequestLog {
 public:
  void Write(const FinishedRequest& request);

 private:
  std::mutex mutex_;  // one line at a time
};

// A fresh request id: 32 hex digits.
std::string NewRequestId();

// Whether a client's request id can be used as given: 1 to kMaxRequestIdBytes printable ASCII characters and no
// space, so that it stays one token of one log line (a newline in it would forge a line of its own).
inline constexpr size_t kMaxRequestIdBytes = 128;
bool IsUsableRequestId(absl::string_view id);

}  // namespace arach::server
