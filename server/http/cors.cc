#include "server/http/cors.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http/http_call.h"

namespace arach::server::http {
namespace {

constexpr char kAllowedMethods[] = "GET, POST, DELETE";
constexpr char kPreflightMaxAgeSeconds[] = "600";
// The headers of our answers a page may read.
constexpr char kExposedHeaders[] =
    "x-request-id, x-arach-variant, Retry-After, x-ratelimit-limit-requests, x-ratelimit-limit-tokens, "
    "x-ratelimit-remaining-requests, x-ratelimit-remaining-tokens, x-ratelimit-reset-requests, x-ratelimit-reset-tokens";

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> origins) {
  for (std::string& origin : origins) {
    if (origin == "*") {
      any_origin_ = true;
    } else {
      origins_.push_back(std::move(origin));
    }
  }
}

bool CorsPolicy::Allows(const std::string& origin) const {
  return any_origin_ || std::any_of(origins_.begin(), origins_.end(), [&](const std::string& o) { return absl::EqualsIgnoreCase(o, origin); });
}

bool CorsPolicy::Apply(const httplib::Request& request, httplib::Response& response) const {
  if (!enabled() || !request.has_header("Origin")) return false;
  const std::string origin = request.get_header_value("Origin");
  const bool preflight = request.method == "OPTIONS" && request.has_header("Access-Control-Request-Method");
  if (!Allows(origin)) {
    if (!preflight) return false;  // served; the browser keeps the answer from the page
    SendError(response, absl::PermissionDeniedError(absl::StrCat("origin '", origin, "' may not call this server (--cors_allowed_origins)")));
    return true;
  }
  response.set_header("Access-Control-Allow-Origin", any_origin_ ? std::string("*") : origin);
  if (!any_origin_) response.set_header("Vary", "Origin");
  if (!preflight) {
    response.set_header("Access-Control-Expose-Headers", kExposedHeaders);
    return false;
  }
  response.status = 204;
  response.set_header("Access-Control-Allow-Methods", kAllowedMethods);
  if (request.has_header("Access-Control-Request-Headers")) {
    response.set_header("Access-Control-Allow-Headers", request.get_header_value("Access-Control-Request-Headers"));
  }
  response.set_header("Access-Control-Max-Age", kPreflightMaxAgeSeconds);
  return true;
}

}  // namespace arach::server::http
