// The one gate every RPC passes (Generate, Score, GetModelInfo, Tokenize): while the model loads or the
// server drains, a call gets UNAVAILABLE (counted in arach_requests_rejected_total); while serving, it is
// counted in flight (so a drain can wait for it) until its ticket is released.
#pragma once

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/service_context.h"

namespace arach::server {

// A call admitted while serving. Move-only; leaves the in-flight count when destroyed or released.
class CallTicket {
 public:
  CallTicket() = default;
  CallTicket(CallTicket&& other) noexcept : state_(std::exchange(other.state_, nullptr)), engine_(other.engine_) {}
  CallTicket& operator=(CallTicket&& other) noexcept;
  CallTicket(const CallTicket&) = delete;
  CallTicket& operator=(const CallTicket&) = delete;
  ~CallTicket() { Release(); }

  // The engine that serves the call (set while admitted).
  Engine& engine() const { return *engine_; }
  bool admitted() const { return state_ != nullptr; }
  void Release();

 private:
  friend absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context);
  CallTicket(ServingState* state, Engine* engine) : state_(state), engine_(engine) {}

  ServingState* state_ = nullptr;
  Engine* engine_ = nullptr;
};

// UNAVAILABLE ("the model is still loading" / "the server is draining") unless serving.
absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context);

// Counts a request refused before or at submission in arach_requests_rejected_total{code}.
void RecordRejection(ServiceContext& context, const absl::Status& status);

}  // namespace arach::server
