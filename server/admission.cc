#include "server/admission.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach::server {

CallUsage::~CallUsage() {
  if (reserved_ > 0) limiter_.Settle(caller_, reserved_, used_.load());
}

absl::Status CallUsage::Reserve(int64_t tokens, const std::string& field) {
  ARACH_RETURN_IF_ERROR(limiter_.ReserveTokens(caller_, tokens, field));
  reserved_ += tokens;
  return absl::OkStatus();
}

CallTicket& CallTicket::operator=(CallTicket&& other) noexcept {
  if (this != &other) {
    Release();
    context_ = other.context_;
    engine_ = other.engine_;
    usage_ = std::move(other.usage_);
  }
  return *this;
}

int CallTicket::PriorityFor(std::optional<int> requested) const {
  if (requested) return *requested;
  return caller().priority.value_or(0);
}

std::string CallTicket::CacheSaltFor(const std::string& requested) const {
  if (!context_->prefix_cache_per_key) return requested;
  // Length-prefixed, so that no key name and salt written together read as another key's.
  return absl::StrCat(caller().key.size(), ":", caller().key, requested);
}

absl::Status CallTicket::ReserveTokens(int64_t tokens, const std::string& field) {
  absl::Status status = usage_->Reserve(tokens, field);
  if (status.code() == absl::StatusCode::kResourceExhausted) context_->metrics->RecordRateLimited(caller().key, "tpm");
  return status;
}

void CallTicket::Release() {
  if (usage_ == nullptr) return;
  usage_.reset();
  context_->state.Leave();
}

absl::StatusOr<CallTicket> AdmitCall(ServiceContext& context, absl::string_view authorization) {
  absl::StatusOr<Caller> caller = Authenticate(*context.keys, authorization);
  if (!caller.ok()) {
    RecordRejection(context, caller.status(), "unknown");
    return caller.status();
  }
  if (!context.state.TryEnter()) {
    const absl::Status status = absl::UnavailableError(context.state.phase() == Phase::kLoading ? "the model is still loading"
                                                                                                : "the server is draining");
    RecordRejection(context, status, caller->key);
    return status;
  }
  if (absl::Status limited = context.rate_limiter->TakeRequest(*caller); !limited.ok()) {
    context.state.Leave();
    context.metrics->RecordRateLimited(caller->key, "rpm");
    RecordRejection(context, limited, caller->key);
    return limited;
  }
  // Serving implies a loaded engine: serve.cc stores it before the phase turns to serving and drops it only
  // after the drain, which waits for admitted calls.
  return CallTicket(&context, context.engine.load(), std::make_shared<CallUsage>(std::move(*caller), *context.rate_limiter));
}

void RecordRejection(ServiceContext& context, const absl::Status& status, const std::string& key) {
  context.metrics->RecordRejected(absl::AsciiStrToLower(absl::StatusCodeToString(status.code())), key);
}

absl::StatusOr<ResolvedVariant> ResolveVariant(ServiceContext& context, const CallTicket& ticket,
                                               const RequestedVariant& requested, absl::string_view field) {
  const bool chooses = requested.arach.has_value() || requested.skip.has_value() || requested.arach_offset.has_value();
  if (chooses && context.variants->experiment()) {
    if (absl::Status allowed = RequireScope(ticket.caller(), kScopeExperiment, field); !allowed.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(allowed.message(), ": the experiment '", context.variants->experiment()->name,
                                                      "' assigns the variant, and only keys with that scope may choose it"));
    }
  }
  ResolvedVariant resolved = context.variants->Resolve(requested);
  if (!resolved.arm.empty()) context.metrics->RecordAssignment(resolved.arm, resolved.variant);
  return resolved;
}

}  // namespace arach::server
