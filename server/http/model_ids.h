// The model ids the HTTP API serves: NAME (the server decides the variant: its default or its A/B
// experiment) and NAME:VARIANT for each variant the server can run (base, arach, and with an adapter
// skip and arach+skip).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/variant_resolver.h"

namespace arach::server::http {

// Every id GET /v1/models lists, NAME first.
std::vector<std::string> ServedModelIds(const std::string& served_name, bool has_adapter);

// NOT_FOUND (param "model"): `model` is not one of ServedModelIds, which the message lists.
absl::Status ModelNotServed(const std::string& model, const std::string& served_name, bool has_adapter);

// The variant a `model` field asks for: nothing set for NAME; NOT_FOUND (param "model") for another name;
// INVALID_ARGUMENT (param "model") for an unknown suffix or a skip variant without an adapter.
absl::StatusOr<RequestedVariant> VariantOfModelId(const std::string& model, const std::string& served_name,
                                                  bool has_adapter);

}  // namespace arach::server::http
