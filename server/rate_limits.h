// Per-key limits on requests and tokens per minute (the rpm and tpm of an API key, api_keys.h), as token
// buckets that refill continuously: a full bucket holds one minute's limit, so a key may burst up to its limit
// and then goes at the limit's pace. A call takes one request at the gate and reserves its tokens (prompt +
// max_tokens) before it reaches the engine; at its end it settles with what it really used (prompt +
// generated tokens), giving back the rest. Refusals are RESOURCE_EXHAUSTED with the seconds after which the
// same call would pass (RetryAfterOf), which both APIs pass on (Retry-After, x-ratelimit-*).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "server/caller.h"

namespace arach::server {

// A refusal that says when to try again.
absl::Status WithRetryAfter(absl::Status status, double seconds);
// The seconds a refusal asks the client to wait, when it says.
std::optional<double> RetryAfterOf(const absl::Status& status);

// What a key has left, for the x-ratelimit-* headers (a limit of 0: none).
struct RateLimitState {
  int64_t limit_requests = 0;
  int64_t remaining_requests = 0;
  double reset_requests_seconds = 0;  // until the bucket is full again
  int64_t limit_tokens = 0;
  int64_t remaining_tokens = 0;
  double reset_tokens_seconds = 0;
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes one request from the caller's requests bucket; RESOURCE_EXHAUSTED ("rpm") when it is empty.
  absl::Status TakeRequest(const Caller& caller, Clock::time_point now = Clock::now());
  // Reserves `tokens` from the caller's tokens bucket: RESOURCE_EXHAUSTED ("tpm") when it holds fewer;
  // INVALID_ARGUMENT naming `field` when `tokens` exceed the whole minute's limit (the call could never pass).
  absl::Status ReserveTokens(const Caller& caller, int64_t tokens, const std::string& field, Clock::time_point now = Clock::now());
  // A call that reserved `reserved` tokens used `used`: the difference goes back to (or is taken from) the bucket.
  void Settle(const Caller& caller, int64_t reserved, int64_t used, Clock::time_point now = Clock::now());
  RateLimitState State(const Caller& caller, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    bool started = false;  // a bucket starts full
    double level = 0;      // may go below zero when a call used more than it reserved
    Clock::time_point updated;
    // Refills at `per_minute` a minute up to `per_minute`, then returns the level.
    double Refill(int64_t per_minute, Clock::time_point now);
  };
  struct Buckets {
    Bucket requests;
    Bucket tokens;
  };

  std::mutex mutex_;
  std::map<std::string, Buckets> buckets_;  // by key name (keys are configured, so this is bounded)
};

}  // namespace arach::server
