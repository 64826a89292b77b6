#include "server/admission.h"

#include "absl/strings/ascii.h"

namespace arach::server {

CallTicket& CallTicket::operator=(CallTicket&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = std::exchange(other.state_, nullptr);
    engine_ = other.engine_;
  }
  return *this;
}

void CallTicket::Release() {
  if (state_ != nullptr) std::exchange(state_, nullptr)->Leave();
}

absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context) {
  if (!context.state.TryEnter()) {
    const absl::Status status = absl::UnavailableError(context.state.phase() == Phase::kLoading ? "the model is still loading"
                                                                                                : "the server is draining");
    RecordRejection(context, status);
    return status;
  }
  // Serving implies a loaded engine: main stores it before the phase turns to serving and drops it only
  // after the drain, which waits for admitted calls.
  Engine* engine = context.engine.load();
  return CallTicket(&context.state, engine);
}

void RecordRejection(ServiceContext& context, const absl::Status& status) {
  context.metrics->RecordRejected(absl::AsciiStrToLower(absl::StatusCodeToString(status.code())));
}

}  // namespace arach::server
