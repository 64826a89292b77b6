// Decides the variant a request runs under: the server default, overridden field by field by what the
// request sets explicitly (an explicit choice always wins).
#pragma once

#include <string>

#include "arach/v1/inference.pb.h"
#include "engine/features/variant.h"

namespace arach::server {

struct ResolvedVariant {
  Variant variant;
  std::string arm;  // experiment arm that assigned it; empty when the default or the request decided
};

class VariantResolver {
 public:
  explicit VariantResolver(Variant default_variant) : default_(default_variant) {}

  ResolvedVariant Resolve(const arach::v1::VariantSpec& spec, const std::string& experiment_key) const;
  const Variant& default_variant() const { return default_; }

 private:
  Variant default_;
};

// The proto description of a served variant.
void FillServedVariant(const ResolvedVariant& resolved, arach::v1::ServedVariant* out);

}  // namespace arach::server
