// Runs the real arach-server binary as a child process on loopback ports for end-to-end tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/testing/prometheus_text.h"

namespace arach::testing {

class ServerProcess {
 public:
  // Starts `binary` with `args` plus --listen 127.0.0.1:0 --http_listen 127.0.0.1:0 and waits for its
  // "ready" line (or exit, or `timeout`).
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& binary, std::vector<std::string> args,
                                                              std::chrono::seconds timeout = std::chrono::seconds(120));
  ~ServerProcess();  // SIGKILL if still running

  const std::string& grpc_address() const { return grpc_address_; }
  const std::string& http_address() const { return http_address_; }
  const std::string& metrics_address() const { return metrics_address_; }  // the HTTP address unless --metrics_listen
  void Signal(int signal_number);
  // Waits for the process to exit; its exit code, or an error on timeout / death by signal.
  absl::StatusOr<int> Wait(std::chrono::seconds timeout);
  std::string Output();  // everything printed so far (stdout and stderr)
  pid_t pid() const { return pid_; }
  // Resident memory of the server process in KiB (VmRSS), or -1 once it has exited.
  long RssKib() const;

 private:
  ServerProcess() = default;
  void Drain(int fd);

  pid_t pid_ = -1;
  bool exited_ = false;
  std::string grpc_address_, http_address_, metrics_address_;
  std::mutex mutex_;
  std::string output_;
  std::thread reader_;
};

// GET http://ADDRESS/metrics; the body, or an error.
absl::StatusOr<std::string> HttpGetMetrics(const std::string& address);
// The server's /metrics, fetched and parsed.
absl::StatusOr<PrometheusText> ScrapeMetrics(const ServerProcess& server);

}  // namespace arach::testing
