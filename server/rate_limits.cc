#include "server/rate_limits.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace arach::server {
namespace {

constexpr char kRetryAfterPayload[] = "type.arach.dev/retry-after-seconds";

// Seconds until `bucket_level` reaches `wanted` at `per_minute` a minute.
double SecondsUntil(double bucket_level, double wanted, int64_t per_minute) {
  return std::max(0.0, (wanted - bucket_level) * 60.0 / static_cast<double>(per_minute));
}

}  // namespace

absl::Status WithRetryAfter(absl::Status status, double seconds) {
  status.SetPayload(kRetryAfterPayload, absl::Cord(absl::StrCat(seconds)));
  return status;
}

std::optional<double> RetryAfterOf(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kRetryAfterPayload);
  double seconds = 0;
  if (!payload || !absl::SimpleAtod(std::string(*payload), &seconds)) return std::nullopt;
  return seconds;
}

double RateLimiter::Bucket::Refill(int64_t per_minute, Clock::time_point now) {
  const double capacity = static_cast<double>(per_minute);
  if (!started) {
    started = true;
    level = capacity;
  } else {
    const double minutes = std::chrono::duration<double>(now - updated).count() / 60.0;
    level = std::min(capacity, level + std::max(0.0, minutes) * capacity);
  }
  updated = now;
  return level;
}

absl::Status RateLimiter::TakeRequest(const Caller& caller, Clock::time_point now) {
  const int64_t rpm = caller.limits.requests_per_minute;
  if (rpm <= 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mutex_);
  Bucket& bucket = buckets_[caller.key].requests;
  if (bucket.Refill(rpm, now) < 1.0) {
    const double wait = SecondsUntil(bucket.level, 1.0, rpm);
    return WithRetryAfter(absl::ResourceExhaustedError(absl::StrCat("the key '", caller.key, "' is over its ", rpm,
                                                                    " requests per minute (rpm); retry in ", std::ceil(wait), " s")),
                          wait);
  }
  bucket.level -= 1.0;
  return absl::OkStatus();
}

absl::Status RateLimiter::ReserveTokens(const Caller& caller, int64_t tokens, const std::string& field, Clock::time_point now) {
  const int64_t tpm = caller.limits.tokens_per_minute;
  if (tpm <= 0) return absl::OkStatus();
  if (tokens > tpm) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the request needs ", tokens, " tokens (prompt + max_tokens), more than the key '",
                                                   caller.key, "' may use in a minute (tpm=", tpm, ")"));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Bucket& bucket = buckets_[caller.key].tokens;
  if (bucket.Refill(tpm, now) < static_cast<double>(tokens)) {
    const double wait = SecondsUntil(bucket.level, static_cast<double>(tokens), tpm);
    return WithRetryAfter(absl::ResourceExhaustedError(absl::StrCat("the key '", caller.key, "' is over its ", tpm,
                                                                    " tokens per minute (tpm): this request needs ", tokens,
                                                                    "; retry in ", std::ceil(wait), " s")),
                          wait);
  }
  bucket.level -= static_cast<double>(tokens);
  return absl::OkStatus();
}

void RateLimiter::Settle(const Caller& caller, int64_t reserved, int64_t used, Clock::time_point now) {
  const int64_t tpm = caller.limits.tokens_per_minute;
  if (tpm <= 0 || reserved == used) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Bucket& bucket = buckets_[caller.key].tokens;
  bucket.Refill(tpm, now);
  // Unused tokens come back (up to a full bucket); tokens used beyond the reservation are taken, possibly below zero.
  bucket.level = std::min(static_cast<double>(tpm), bucket.level + static_cast<double>(reserved - used));
}

RateLimitState RateLimiter::State(const Caller& caller, Clock::time_point now) {
  RateLimitState state;
  std::lock_guard<std::mutex> lock(mutex_);
  Buckets& buckets = buckets_[caller.key];
  if (const int64_t rpm = caller.limits.requests_per_minute; rpm > 0) {
    const double level = buckets.requests.Refill(rpm, now);
    state.limit_requests = rpm;
    state.remaining_requests = std::max<int64_t>(0, static_cast<int64_t>(std::floor(level)));
    state.reset_requests_seconds = SecondsUntil(level, static_cast<double>(rpm), rpm);
  }
  if (const int64_t tpm = caller.limits.tokens_per_minute; tpm > 0) {
    const double level = buckets.tokens.Refill(tpm, now);
    state.limit_tokens = tpm;
    state.remaining_tokens = std::max<int64_t>(0, static_cast<int64_t>(std::floor(level)));
    state.reset_tokens_seconds = SecondsUntil(level, static_cast<double>(tpm), tpm);
  }
  return state;
}

}  // namespace arach::server
