// The one gate every call of either API passes (Generate, Chat, Score, GetModelInfo, Tokenize, Detokenize,
// the HTTP API's routes but /health and /ready): while the model loads or the server drains, a call gets
// UNAVAILABLE; without a valid API key (where keys are configured) UNAUTHENTICATED; over its key's requests
// per minute RESOURCE_EXHAUSTED (each refusal counted in arach_requests_rejected_total{code, key}). An admitted
// call is counted in flight (so a drain can wait for it) until its ticket is released, and carries its caller:
// the key's scopes, limits and default priority.
#pragma once

#include <atomic>
#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/caller.h"
#include "server/service_context.h"

namespace arach::server {

// What an admitted call may use and used: its caller, the tokens it reserved against the key's tokens per
// minute and those its engine requests used (added from any thread, e.g. an engine observer). Shared by the
// ticket and the call's observers; when the last of them lets go, the reservation is settled with the tokens
// used (rate_limits.h), so a request cancelled mid-generation is charged for what it computed.
class CallUsage {
 public:
  CallUsage(Caller caller, RateLimiter& limiter) : caller_(std::move(caller)), limiter_(limiter) {}
  ~CallUsage();
  CallUsage(const CallUsage&) = delete;
  CallUsage& operator=(const CallUsage&) = delete;

  const Caller& caller() const { return caller_; }
  // Reserves `tokens` of the key's tokens per minute: RESOURCE_EXHAUSTED with a retry time when short,
  // INVALID_ARGUMENT naming `field` when over the whole limit.
  absl::Status Reserve(int64_t tokens, const std::string& field);
  void AddUsedTokens(int64_t tokens) { used_.fetch_add(tokens, std::memory_order_relaxed); }

 private:
  const Caller caller_;
  RateLimiter& limiter_;
  int64_t reserved_ = 0;  // set before any observer holds this
  std::atomic<int64_t> used_{0};
};

// A call admitted while serving. Move-only; leaves the in-flight count when destroyed or released (its usage
// may live on in the observers of requests still running).
class CallTicket {
 public:
  CallTicket() = default;
  CallTicket(CallTicket&& other) noexcept = default;
  CallTicket& operator=(CallTicket&& other) noexcept;
  CallTicket(const CallTicket&) = delete;
  CallTicket& operator=(const CallTicket&) = delete;
  ~CallTicket() { Release(); }

  // The engine that serves the call (set while admitted).
  Engine& engine() const { return *engine_; }
  const Caller& caller() const { return usage_->caller(); }
  bool admitted() const { return usage_ != nullptr; }
  // The priority of the call's engine requests: the request's own, else its key's default, else 0.
  int PriorityFor(std::optional<int> requested) const;
  // The prefix-cache salt of the call's engine requests (EngineRequest::cache_salt): the request's own
  // (`requested`, vLLM's cache_salt; empty: none), within its key's namespace under --prefix_cache_per_key.
  std::string CacheSaltFor(const std::string& requested) const;
  // The call's usage, for the observers of its engine requests to add the tokens they used.
  const std::shared_ptr<CallUsage>& usage() const { return usage_; }
  // Records a refusal of this call by its key's tokens per minute (arach_rate_limited_total) and returns it.
  absl::Status ReserveTokens(int64_t tokens, const std::string& field);
  void Release();

 private:
  friend absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context, absl::string_view authorization);
  CallTicket(ServiceContext* context, Engine* engine, std::shared_ptr<CallUsage> usage)
      : context_(context), engine_(engine), usage_(std::move(usage)) {}

  ServiceContext* context_ = nullptr;
  Engine* engine_ = nullptr;
  std::shared_ptr<CallUsage> usage_;  // null once released
};

// UNAVAILABLE ("the model is still loading" / "the server is draining") unless serving; UNAUTHENTICATED for
// missing or unknown credentials (`authorization`: "Bearer KEY"); RESOURCE_EXHAUSTED over the key's rpm.
absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context, absl::string_view authorization);

// Counts a request refused before or at submission in arach_requests_rejected_total{code, key}.
void RecordRejection(ServiceContext& context, const absl::Status& status, const std::string& key = kOpenCallerName);

// The variant of an admitted call (VariantResolver), after the one rule about who may choose it: while an A/B
// experiment runs, a request that sets its variant needs a key with the scope `experiment` (PERMISSION_DENIED
// naming `field`). Records the experiment's assignment.
absl::StatusOr<ResolvedVariant> ResolveVariant(ServiceContext& context, const CallTicket& ticket,
                                               const RequestedVariant& requested, absl::string_view field);

}  // namespace arach::server
