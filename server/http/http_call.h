// What every HTTP API handler shares: the request id, error answers, the variant a request runs under,
// and the response headers that say who served it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <optional>

#include <string>

#include "absl/status/statusor.h"
#include "server/admission.h"
#include "server/http/completion_request.h"
#include "server/rate_limits.h"
#include "server/service_context.h"
#include "server/variant_resolver.h"

namespace arach::server::http {

// The response headers that name the request and its variant.
inline constexpr char kRequestIdHeader[] = "x-request-id";
inline constexpr char kVariantHeader[] = "x-arach-variant";
inline constexpr char kExperimentArmHeader[] = "x-arach-experiment-arm";

// The client's x-request-id where it is usable as given (IsUsableRequestId), else a fresh id (a header a proxy
// may have set is replaced, not refused; gRPC's request_id field is refused: ChosenRequestId).
std::string RequestIdOf(const httplib::Request& request);

// How long the client waits for a whole (non-streamed) answer, where its library says so: OpenAI's Node client
// sends x-stainless-timeout (seconds, its whole-request timeout), the Python client x-stainless-read-timeout (seconds
// without a byte; a plain answer's first byte is its end); the smaller one. Absent, malformed or not positive: none.
std::optional<std::chrono::duration<double>> ClientWaitOf(const httplib::Request& request);

// Answers with `status` (not OK) in OpenAI's error shape; 401 also says WWW-Authenticate, 429 Retry-After (the
// refusal's own wait, rate_limits.h, else 1 s).
void SendError(httplib::Response& response, const absl::Status& status);
// The x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers OpenAI's clients read, for a key with limits.
void SetRateLimitHeaders(httplib::Response& response, const RateLimitState& state);
// Answers with a JSON body.
void SendJson(httplib::Response& response, int http_status, const nlohmann::json& body);

// The variant of an admitted generation request: its model id's suffix (NAME:arach), then its own variant fields
// (arach, arach_offset, skip), else the server's default or its A/B experiment (by experiment_key / user).
// Errors: NOT_FOUND for another model, INVALID_ARGUMENT naming "model" for a bad suffix, PERMISSION_DENIED when
// the request chooses while an experiment runs and its key lacks the scope `experiment` (admission.h).
absl::StatusOr<ResolvedVariant> ResolveRequestVariant(ServiceContext& context, const CallTicket& ticket,
                                                      const GenerationFields& fields);

// Sets x-arach-variant (and x-arach-experiment-arm when an arm assigned it).
void SetVariantHeaders(httplib::Response& response, const ResolvedVariant& variant);

// Unix time in seconds (the `created` field).
int64_t UnixSeconds();

}  // namespace arach::server::http
