// Decides the variant a request runs under: explicit variant fields always win (unset ones take the
// server default); a request that sets none is assigned by the A/B experiment when one is configured
// (stable by experiment key), else it gets the server default.
#pragma once

#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "arach/v1/inference.pb.h"
#include "engine/features/variant.h"
#include "server/experiment.h"

namespace arach::server {

struct ResolvedVariant {
  Variant variant;
  std::string arm;  // experiment arm that assigned it; empty when the default or the request decided
};

class VariantResolver {
 public:
  VariantResolver(Variant default_variant, std::optional<Experiment> experiment);

  ResolvedVariant Resolve(const arach::v1::VariantSpec& spec, const std::string& experiment_key) const;
  const Variant& default_variant() const { return default_; }
  const std::optional<Experiment>& experiment() const { return experiment_; }

 private:
  Variant default_;
  std::optional<Experiment> experiment_;
  mutable std::mutex mutex_;     // guards rng_
  mutable std::mt19937_64 rng_;  // draws for requests without an experiment key
};

// The proto description of a served variant.
void FillServedVariant(const ResolvedVariant& resolved, arach::v1::ServedVariant* out);

}  // namespace arach::server
