#include "server/variant_resolver.h"

namespace arach::server {

VariantResolver::VariantResolver(Variant default_variant, std::optional<Experiment> experiment)
    : default_(default_variant), experiment_(std::move(experiment)), rng_(std::random_device{}()) {}

ResolvedVariant VariantResolver::Resolve(const RequestedVariant& requested) const {
  const bool explicit_choice = requested.arach.has_value() || requested.skip.has_value();
  ResolvedVariant resolved;
  resolved.variant = default_;
  if (!explicit_choice && experiment_) {
    double uniform = 0.0;
    if (requested.experiment_key.empty()) {
      std::lock_guard<std::mutex> lock(mutex_);
      uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    }
    const ExperimentArm& arm = experiment_->Assign(requested.experiment_key, uniform);
    resolved.variant = arm.variant;
    resolved.arm = arm.name;
  }
  if (requested.arach) resolved.variant.arach = *requested.arach;
  if (requested.skip) resolved.variant.skip = *requested.skip;
  if (requested.arach_offset) resolved.variant.arach_offset = *requested.arach_offset;
  resolved.lora = requested.lora;
  return resolved;
}

}  // namespace arach::server
