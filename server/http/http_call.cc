#include "server/http/http_call.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/http/model_ids.h"
#include "server/http/openai_error.h"
#include "server/request_log.h"

namespace arach::server::http {

std::string RequestIdOf(const httplib::Request& request) {
  const std::string given = request.get_header_value(kRequestIdHeader);
  return IsUsableRequestId(given) ? given : NewRequestId();
}

std::optional<std::chrono::duration<double>> ClientWaitOf(const httplib::Request& request) {
  constexpr double kLongestWaitSeconds = 1e6;
  std::optional<double> wait;
  for (const char* header : {"x-stainless-timeout", "x-stainless-read-timeout"}) {
    double seconds;
    if (!request.has_header(header) || !absl::SimpleAtod(request.get_header_value(header), &seconds) || !(seconds > 0)) continue;
    wait = std::min(wait.value_or(kLongestWaitSeconds), std::min(seconds, kLongestWaitSeconds));
  }
  if (!wait) return std::nullopt;
  return std::chrono::duration<double>(*wait);
}

void SendJson(httplib::Response& response, int http_status, const nlohmann::json& body) {
  response.status = http_status;
  response.set_content(JsonText(body), "application/json");
}

void SendError(httplib::Response& response, const absl::Status& status) {
  const int http_status = HttpStatusOf(status);
  if (http_status == 401) response.set_header("WWW-Authenticate", "Bearer");
  if (http_status == 429) {
    const double wait = RetryAfterOf(status).value_or(1.0);
    response.set_header("Retry-After", absl::StrCat(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait)))));
  }
  SendJson(response, http_status, ErrorBody(status));
}

namespace {

// OpenAI's reset format: "1s", "6m0s", "850ms".
std::string ResetText(double seconds) {
  if (seconds < 1) return absl::StrCat(static_cast<int64_t>(std::ceil(seconds * 1000)), "ms");
  const int64_t whole = static_cast<int64_t>(std::ceil(seconds));
  return whole < 60 ? absl::StrCat(whole, "s") : absl::StrCat(whole / 60, "m", whole % 60, "s");
}

}  // namespace

void SetRateLimitHeaders(httplib::Response& response, const RateLimitState& state) {
  if (state.limit_requests > 0) {
    response.set_header("x-ratelimit-limit-requests", absl::StrCat(state.limit_requests));
    response.set_header("x-ratelimit-remaining-requests", absl::StrCat(state.remaining_requests));
    response.set_header("x-ratelimit-reset-requests", ResetText(state.reset_requests_seconds));
  }
  if (state.limit_tokens > 0) {
    response.set_header("x-ratelimit-limit-tokens", absl::StrCat(state.limit_tokens));
    response.set_header("x-ratelimit-remaining-tokens", absl::StrCat(state.remaining_tokens));
    response.set_header("x-ratelimit-reset-tokens", ResetText(state.reset_tokens_seconds));
  }
}

absl::StatusOr<ResolvedVariant> ResolveRequestVariant(ServiceContext& context, const CallTicket& ticket,
                                                      const GenerationFields& fields) {
  ARACH_ASSIGN_OR_RETURN(RequestedVariant requested,
                         VariantOfModelId(fields.model, ServedModelsOf(context.served_model_name, ticket.engine())));
  // The parameter that chose the variant, for a refusal: the model id's suffix, else the first variant field set.
  const char* chosen_by = requested.arach || requested.skip ? "model"
                          : fields.variant.arach            ? "arach"
                          : fields.variant.skip             ? "skip"
                                                            : "arach_offset";
  if (fields.variant.arach) requested.arach = fields.variant.arach;
  if (fields.variant.arach_offset) requested.arach_offset = fields.variant.arach_offset;
  if (fields.variant.skip) requested.skip = fields.variant.skip;
  requested.experiment_key = fields.variant.experiment_key;
  return ResolveVariant(context, ticket, requested, chosen_by);
}

void SetVariantHeaders(httplib::Response& response, const ResolvedVariant& variant) {
  response.set_header(kVariantHeader, variant.variant.Name());
  if (!variant.arm.empty()) response.set_header(kExperimentArmHeader, variant.arm);
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace arach::server::http
