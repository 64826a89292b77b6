// The caller of one call: the API key it presented (server/api_keys.h), or nobody in particular on an open
// server, and what that lets it do. Authenticated once, at the gate every call of either API passes
// (admission.h).
#pragma once

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "server/api_keys.h"

namespace arach::server {

inline constexpr char kOpenCallerName[] = "open";  // the key label of calls to a server without keys

struct Caller {
  std::string key = kOpenCallerName;  // the key's name (logs and the `key` label of metrics)
  uint32_t scopes = kAllScopes;
  KeyLimits limits;
  std::optional<int> priority;        // the key's default priority
};

// The caller of a call whose credentials are `authorization`: the value of HTTP's Authorization header or of
// gRPC's `authorization` metadata, "Bearer SECRET". On an open server every call is an open caller;
// otherwise UNAUTHENTICATED when the value is missing, not a bearer token, or no key's secret.
absl::StatusOr<Caller> Authenticate(const ApiKeys& keys, absl::string_view authorization);

// PERMISSION_DENIED naming the scope and the key unless `caller` has `scope`; `field` is the request field that
// needs it (e.g. "diagnostics").
absl::Status RequireScope(const Caller& caller, Scope scope, absl::string_view field);

}  // namespace arach::server
