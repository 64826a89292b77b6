// A minimal HTTP endpoint for Prometheus scrapes: GET /metrics answers with the text exposition format
// produced by a callback; other paths get 404. One thread, one connection at a time, read and write
// bounded by timeouts. (prometheus-cpp's own Exposer runs civetweb workers with 100 KiB stacks in
// Debian's build, which overflow in this process; scrapes need nothing more than this.)
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace arach::server {

class MetricsHttpEndpoint {
 public:
  using BodyFn = std::function<std::string()>;

  // Listens on `listen` (HOST:PORT; port 0 picks a free one) and serves `body` at /metrics.
  static absl::StatusOr<std::unique_ptr<MetricsHttpEndpoint>> Start(const std::string& listen, BodyFn body);
  ~MetricsHttpEndpoint();

  int port() const { return port_; }

 private:
  MetricsHttpEndpoint(int listen_fd, int wake_read, int wake_write, int port, BodyFn body);
  void Serve();
  void Handle(int fd);

  int listen_fd_;
  int wake_read_;   // Stop() writes to wake_write_ to end the poll loop
  int wake_write_;
  int port_;
  BodyFn body_;
  std::thread thread_;
};

}  // namespace arach::server
