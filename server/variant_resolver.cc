#include "server/variant_resolver.h"

namespace arach::server {

ResolvedVariant VariantResolver::Resolve(const arach::v1::VariantSpec& spec, const std::string& experiment_key) const {
  ResolvedVariant resolved;
  resolved.variant = default_;
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
