#include "server/request_log.h"

#include <cstdio>
#include <random>

#include "absl/strings/str_format.h"

namespace arach::server {

void RequestLog::Write(const FinishedRequest& r) {
  const std::string line = absl::StrFormat(
      "request id=%s api=%s route=%s key=%s variant=%s status=%d prompt_tokens=%d completion_tokens=%d latency_ms=%.1f finish=%s lora=%s\n",
      r.id, r.api, r.route, r.key, r.variant.empty() ? "-" : r.variant, r.status, r.prompt_tokens, r.completion_tokens, 1e3 * r.seconds,
      r.finish.empty() ? "-" : r.finish, r.lora.empty() ? "-" : r.lora);
  std::lock_guard<std::mutex> lock(mutex_);
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x%016x", rng(), rng());
}

bool IsUsableRequestId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (char c : id) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace arach::server
