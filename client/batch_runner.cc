#include "client/batch_runner.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"

namespace arach::client {
namespace {

// The wait before try `attempt + 1`: the answer's Retry-After (seconds) when it gave one, else the back-off.
std::chrono::duration<double> WaitBefore(int attempt, const httplib::Result& answer, const BatchRunOptions& options) {
  double seconds = options.first_backoff_seconds * static_cast<double>(1 << std::min(attempt - 1, 20));
  if (answer && answer->has_header("Retry-After")) {
    double retry_after = 0;
    if (absl::SimpleAtod(answer->get_header_value("Retry-After"), &retry_after) && retry_after >= 0) seconds = retry_after;
  }
  return std::chrono::duration<double>(std::min(seconds, options.max_backoff_seconds));
}

std::unique_ptr<httplib::Client> MakeClient(const std::string& url, const BatchTarget& target, const BatchRunOptions& options) {
  auto client = target.tls_cert.empty() ? std::make_unique<httplib::Client>(url)
                                        : std::make_unique<httplib::Client>(url, target.tls_cert, target.tls_key);
  if (!target.tls_ca.empty()) client->set_ca_cert_path(target.tls_ca);
  client->set_read_timeout(options.read_timeout_seconds, 0);
  client->set_write_timeout(60, 0);
  client->set_connection_timeout(10, 0);
  client->set_keep_alive(true);
  return client;
}

BatchResult Send(httplib::Client& client, const BatchRequest& request, const httplib::Headers& headers,
                 const BatchRunOptions& options, const std::atomic<bool>& stopping) {
  BatchResult result;
  for (int attempt = 1;; ++attempt) {
    result.attempts = attempt;
    const httplib::Result answer = client.Post(request.url, headers, request.body, "application/json");
    result.status_code = answer ? answer->status : 0;
    if (answer) {
      result.body = answer->body;
      result.request_id = answer->get_header_value("x-request-id");
      result.error.clear();
    } else {
      result.body.clear();
      result.error = httplib::to_string(answer.error());
    }
    if (!WorthAnotherTry(result.status_code) || attempt >= options.max_attempts || stopping) return result;
    std::this_thread::sleep_for(WaitBefore(attempt, answer, options));
  }
}

// The target's URL with its scheme: HOST:PORT alone is https when TLS files are given, else http.
absl::StatusOr<std::string> NormalizedUrl(const BatchTarget& target) {
  const std::string& url = target.url;
  const bool tls = !target.tls_ca.empty() || !target.tls_cert.empty();
  const std::string full = absl::StrContains(url, "://") ? url : absl::StrCat(tls ? "https://" : "http://", url);
  if (!absl::StartsWith(full, "http://") && !absl::StartsWith(full, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("http: \"", url, "\" is not http://HOST:PORT or https://HOST:PORT"));
  }
  if (!httplib::Client(full).is_valid()) return absl::InvalidArgumentError(absl::StrCat("http: \"", url, "\" is not a server address"));
  return full;
}

}  // namespace

absl::StatusOr<BatchSummary> SendBatch(const std::vector<BatchRequest>& requests, const BatchTarget& target,
                                      const BatchRunOptions& options, std::ostream& output,
                                      const std::function<void(size_t, size_t)>& on_answered) {
  absl::StatusOr<std::string> url = NormalizedUrl(target);
  if (!url.ok()) return url.status();
  if (requests.empty()) return BatchSummary{};
  httplib::Headers headers;
  if (!target.api_key.empty()) headers.emplace("Authorization", absl::StrCat("Bearer ", target.api_key));

  std::mutex mutex;
  std::condition_variable answered;
  std::vector<std::optional<BatchResult>> results(requests.size());  // [requests], filled as answers come
  std::atomic<size_t> next{0};
  std::atomic<bool> stopping{false};
  auto work = [&] {
    std::unique_ptr<httplib::Client> client = MakeClient(*url, target, options);
    for (size_t i; !stopping && (i = next++) < requests.size();) {
      BatchResult result = Send(*client, requests[i], headers, options, stopping);
      std::lock_guard<std::mutex> lock(mutex);
      results[i] = std::move(result);
      answered.notify_one();
    }
  };
  std::vector<std::thread> workers;
  const int threads = std::clamp<int>(options.concurrency, 1, static_cast<int>(requests.size()));
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);

  BatchSummary summary;
  absl::Status written = absl::OkStatus();
  for (size_t i = 0; i < requests.size() && written.ok(); ++i) {
    BatchResult result;
    {
      std::unique_lock<std::mutex> lock(mutex);
      answered.wait(lock, [&] { return results[i].has_value(); });
      result = *std::move(results[i]);
      results[i].reset();
    }
    output << BatchOutputLine(requests[i], result) << '\n' << std::flush;
    if (!output) {
      written = absl::UnavailableError(absl::StrCat("the output could not be written after ", i, " lines"));
      stopping = true;
      break;
    }
    summary.retries += result.attempts - 1;
    if (result.status_code == 0) {
      ++summary.errors;
    } else if (result.status_code / 100 == 2) {
      ++summary.succeeded;
    } else {
      ++summary.failed;
    }
    if (on_answered) on_answered(i + 1, requests.size());
  }
  for (std::thread& worker : workers) worker.join();
  if (!written.ok()) return written;
  return summary;
}

}  // namespace arach::client
