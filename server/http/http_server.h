// The HTTP front of arach-server (cpp-httplib), beside gRPC in the same process and on the same engine, over
// HTTPS when --http_tls_cert is given (https_certificates.h):
//   GET  /health, /ready    200 while serving, 503 while loading, draining or unhealthy; always open (probes)
//   GET  /live              200 unless the engine is unhealthy (Engine::Health); always open (liveness probe)
//   GET  /metrics           Prometheus text (ServerMetrics::Scrape); open unless --metrics_auth
//   GET  /v1/models         the served model ids (model_ids.h)
//   POST /v1/completions    OpenAI completions (completions.h)
//   POST /v1/chat/completions  OpenAI chat completions (chat_completions.h)
// Every answer is counted in arach_http_requests_total{route, status, variant}; errors are in OpenAI's
// shape (openai_error.h), a body over max_request_bytes gets 413; browsers of --cors_allowed_origins may call (cors.h). Where API keys are configured, every route but
// /health, /ready (and /metrics without --metrics_auth) wants `Authorization: Bearer KEY` (401 otherwise).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/server_options.h"
#include "server/http/background_responses.h"
#include "server/http/https_certificates.h"
#include "server/metrics.h"
#include "server/service_context.h"

namespace arach::server::http {

class HttpServer {
 public:
  // The whole API on `options.listen`.
  static absl::StatusOr<std::unique_ptr<HttpServer>> StartApi(const HttpOptions& options, ServiceContext& context);
  // Only GET /health, /ready and /metrics (a separate internal address, plain HTTP, threads of its own: probes and
  // scrapes are answered however many connections the API holds), /metrics keyed as on the API's address.
  static absl::StatusOr<std::unique_ptr<HttpServer>> StartProbesAndMetrics(const std::string& listen, ServiceContext& context);
  ~HttpServer();  // Stop()

  // Closes the listening socket and waits for the requests in progress.
  void Stop();
  // Reads the HTTPS certificate, key and client CA again (no-op over plain HTTP).
  absl::Status ReloadCertificates();
  // HOST:PORT it listens on (the port picked when 0 was asked for).
  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  absl::Status Listen(const std::string& listen);

  std::unique_ptr<HttpsCertificates> certificates_;  // declared first: outlives the server that reads it
  std::unique_ptr<BackgroundResponses> background_;  // the API's background responses (null on the probes' server)
  std::unique_ptr<httplib::Server> server_;          // an httplib::SSLServer over HTTPS
  std::string address_;
  std::thread thread_;
};

}  // namespace arach::server::http
