// The HTTP front of arach-server (cpp-httplib), beside gRPC in the same process and on the same engine:
//   GET  /health, /ready    200 while serving, 503 while loading or draining
//   GET  /metrics           Prometheus text (ServerMetrics::Scrape)
//   GET  /v1/models         the served model ids (model_ids.h)
//   POST /v1/completions    OpenAI completions (completions.h)
//   POST /v1/chat/completions  OpenAI chat completions (chat_completions.h)
// Every answer is counted in arach_http_requests_total{route, status, variant}; errors are in OpenAI's
// shape (openai_error.h), a body over max_request_bytes gets 413.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/server_options.h"
#include "server/metrics.h"
#include "server/service_context.h"

namespace arach::server::http {

class HttpServer {
 public:
  // The whole API on `options.listen`.
  static absl::StatusOr<std::unique_ptr<HttpServer>> StartApi(const HttpOptions& options, ServiceContext& context);
  // Only GET /metrics (a separate internal address).
  static absl::StatusOr<std::unique_ptr<HttpServer>> StartMetricsOnly(const std::string& listen, ServerMetrics& metrics);
  ~HttpServer();  // Stop()

  // Closes the listening socket and waits for the requests in progress.
  void Stop();
  // HOST:PORT it listens on (the port picked when 0 was asked for).
  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  absl::Status Listen(const std::string& listen);

  httplib::Server server_;
  std::string address_;
  std::thread thread_;
};

}  // namespace arach::server::http
