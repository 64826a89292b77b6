// Runs a batch file's requests against arach-server's OpenAI HTTP API, a bounded number at a time, and writes
// one output line per request (batch_output.h) in the order of `requests`. A request the server answered (any
// status) has its answer in `response`; one that got no answer after every attempt has `response: null` and an
// `error`. Answers the server may give differently later (WorthAnotherTry: 429, 503, 502) and lost connections are
// tried again after Retry-After or a doubling back-off.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/batch_input.h"
#include "client/batch_output.h"

namespace arach::client {

struct BatchTarget {
  std::string url;      // http://HOST:PORT or https://HOST:PORT (HOST:PORT alone: https with TLS files, else http)
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  std::string tls_ca;   // https: PEM CA bundle to trust (default: the system's)
  std::string tls_cert;  // https: client certificate (mutual TLS), with tls_key
  std::string tls_key;
};

struct BatchRunOptions {
  int concurrency = 8;                // requests in flight
  int max_attempts = 5;               // tries of one request, the first included
  double first_backoff_seconds = 0.5;  // wait before the second try without Retry-After; doubles after each
  double max_backoff_seconds = 30;    // no wait is longer (Retry-After included)
  int read_timeout_seconds = 600;     // the longest wait for an answer's bytes
};

struct BatchSummary {
  int succeeded = 0;  // answered 2xx
  int failed = 0;     // answered with another status (after its tries)
  int errors = 0;     // never answered
  int retries = 0;    // tries beyond the first, over all requests
};

// Answers `requests` and writes their output lines to `output` in their order, each as soon as it and the ones
// before it are answered (so a run cut short keeps what it wrote). `on_answered(done, total)` is called (from the
// writing thread, under no lock of the caller's) after each line written. Fails only when `output` cannot be
// written (then no further request is sent) or `target.url` is not a URL; a request's failure is its line.
absl::StatusOr<BatchSummary> SendBatch(const std::vector<BatchRequest>& requests, const BatchTarget& target,
                                      const BatchRunOptions& options, std::ostream& output,
                                      const std::function<void(size_t done, size_t total)>& on_answered = {});

}  // namespace arach::client
