#include "server/variant_resolver.h"

namespace arach::server {

VariantResolver::VariantResolver(Variant default_variant, std::optional<Experiment> experiment)
    : default_(default_variant), experiment_(std::move(experiment)), rng_(std::random_device{}()) {}

ResolvedVariant VariantResolver::Resolve(const arach::v1::VariantSpec& spec, const std::string& experiment_key) const {
  const bool explicit_choice = spec.has_arach() || spec.has_skip();
  ResolvedVariant resolved;
  resolved.variant = default_;
  if (!explicit_choice && experiment_) {
    double uniform = 0.0;
    if (experiment_key.empty()) {
      std::lock_guard<std::mutex> lock(mutex_);
      uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    }
    const ExperimentArm& arm = experiment_->Assign(experiment_key, uniform);
    resolved.variant = arm.variant;
    resolved.arm = arm.name;
  }
  if (spec.has_arach()) resolved.variant.arach = spec.arach();
  if (spec.has_skip()) resolved.variant.skip = spec.skip();
  if (spec.has_arach_offset()) resolved.variant.arach_offset = spec.arach_offset();
  return resolved;
}

void FillServedVariant(const ResolvedVariant& resolved, arach::v1::ServedVariant* out) {
  out->set_name(resolved.variant.Name());
  out->set_arach(resolved.variant.arach);
  out->set_arach_offset(resolved.variant.arach ? resolved.variant.arach_offset : 0.0f);
  out->set_skip(resolved.variant.skip);
  out->set_experiment_arm(resolved.arm);
}

}  // namespace arach::server
