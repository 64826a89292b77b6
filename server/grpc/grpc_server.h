// The gRPC wing's server: arach.v1.Inference on the serving core's ServiceContext, grpc.health.v1.Health and
// (unless turned off) reflection, on one listening port: insecure, TLS or mutual TLS, the certificate files
// read again every tls_reload_seconds. Its interface speaks no gRPC type, so
// that serve.cc (which runs both wings) stays free of them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/server_options.h"
#include "server/service_context.h"

namespace arach::server {

class GrpcServer {
 public:
  // Starts listening on options.listen with health NOT_SERVING; calls go to `context` (which must outlive
  // the server).
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(const GrpcOptions& options, ServiceContext& context);
  ~GrpcServer();  // Shutdown() with no grace, if it did not run yet

  // host:port it listens on (the port the kernel picked for :0).
  const std::string& address() const;
  // What grpc.health.v1.Health answers for the whole server.
  void SetServing(bool serving);
  // Closes the listener and sends GOAWAY on every connection (clients and proxies open a new connection
  // elsewhere; a refused connection is a failure any proxy retries), lets the calls in flight go on and
  // cancels those still running at `deadline`. Returns at once; the first deadline given counts.
  void BeginShutdown(std::chrono::system_clock::time_point deadline);
  // BeginShutdown(deadline), then waits until every call is done.
  void Shutdown(std::chrono::system_clock::time_point deadline);

 private:
  struct Impl;
  explicit GrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace arach::server
