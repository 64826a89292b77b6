// Variant arguments of the CLI: "base", "arach", "skip", "arach+skip", optionally "@OFFSET" for the
// ARACH logit offset (e.g. "arach@0").
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"

namespace arach::client {

absl::StatusOr<arach::v1::VariantSpec> ParseVariantArg(const std::string& arg);

}  // namespace arach::client
