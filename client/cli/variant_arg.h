// The variant fields of a request from the command line: --variant NAME[@OFFSET] (parsed by the engine's
// one variant parser, engine/variant/variant.h) and --arach_offset.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"
#include "engine/variant/variant.h"

namespace arach::client {

// The spec of a written variant: arach and skip set; the offset only when it was written.
arach::v1::VariantSpec ToVariantSpec(const VariantChoice& choice);
// `variant` may be empty (the server decides); `offset` overrides the variant's.
absl::StatusOr<arach::v1::VariantSpec> ParseVariantSpec(const std::string& variant, std::optional<double> offset = std::nullopt);

// Sets a GenerateRequest's, ScoreRequest's or EmbedRequest's variant, experiment key and LoRA adapter (empty: the
// base model).
template <typename Request>
absl::Status ApplyVariant(const std::string& variant, std::optional<double> offset, const std::string& experiment_key,
                          Request* request, const std::string& lora = "") {
  absl::StatusOr<arach::v1::VariantSpec> spec = ParseVariantSpec(variant, offset);
  if (!spec.ok()) return spec.status();
  spec->set_lora(lora);
  *request->mutable_variant() = *spec;
  request->set_experiment_key(experiment_key);
  return absl::OkStatus();
}

}  // namespace arach::client
