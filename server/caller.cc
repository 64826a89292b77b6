#include "server/caller.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace arach::server {

absl::StatusOr<Caller> Authenticate(const ApiKeys& keys, absl::string_view authorization) {
  if (keys.open()) return Caller{};
  constexpr absl::string_view kBearer = "Bearer ";
  if (authorization.empty()) {
    return absl::UnauthenticatedError("no API key: send it as 'Authorization: Bearer KEY' (gRPC: the authorization metadata)");
  }
  if (authorization.size() <= kBearer.size() || !absl::StartsWithIgnoreCase(authorization, kBearer)) {
    return absl::UnauthenticatedError("the authorization is not 'Bearer KEY'");
  }
  const absl::string_view secret = absl::StripAsciiWhitespace(authorization.substr(kBearer.size()));
  const std::optional<ApiKey> key = keys.Find(secret);
  if (!key) return absl::UnauthenticatedError("the API key is not valid");
  Caller caller;
  caller.key = key->name;
  caller.scopes = key->scopes;
  caller.limits = key->limits;
  caller.priority = key->priority;
  return caller;
}

absl::Status RequireScope(const Caller& caller, Scope scope, absl::string_view field) {
  if ((caller.scopes & scope) != 0) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(field, ": the key '", caller.key, "' does not have the scope '",
                                                  ScopeName(scope), "'"));
}

}  // namespace arach::server
