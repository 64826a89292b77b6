// Decides the variant a request runs under: explicit variant fields always win (unset ones take the
// server default); a request that sets none is assigned by the A/B experiment when one is configured
// (stable by experiment key), else it gets the server default. Both APIs read their request's variant
// fields into a RequestedVariant (gRPC from VariantSpec, HTTP from the model id's suffix and the body).
#pragma once

#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "engine/variant/variant.h"
#include "server/experiment.h"

namespace arach::server {

// The variant fields a request set, each optional.
struct RequestedVariant {
  std::optional<bool> arach = std::nullopt;
  std::optional<float> arach_offset = std::nullopt;
  std::optional<bool> skip = std::nullopt;
  std::string experiment_key = "";  // the A/B key (empty: a random draw per request)
  std::string lora = "";            // the LoRA adapter the request named (--lora_modules; empty: the base model)
};

struct ResolvedVariant {
  Variant variant;
  std::string arm;        // experiment arm that assigned it; empty when the default or the request decided
  std::string lora = "";  // the LoRA adapter the request named (an experiment never assigns one; empty: the base model)
};

class VariantResolver {
 public:
  VariantResolver(Variant default_variant, std::optional<Experiment> experiment);

  ResolvedVariant Resolve(const RequestedVariant& requested) const;
  const Variant& default_variant() const { return default_; }
  const std::optional<Experiment>& experiment() const { return experiment_; }

 private:
  Variant default_;
  std::optional<Experiment> experiment_;
  mutable std::mutex mutex_;     // guards rng_
  mutable std::mt19937_64 rng_;  // draws for requests without an experiment key
};

}  // namespace arach::server
