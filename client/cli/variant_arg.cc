#include "client/cli/variant_arg.h"

namespace arach::client {

arach::v1::VariantSpec ToVariantSpec(const VariantChoice& choice) {
  arach::v1::VariantSpec spec;
  spec.set_arach(choice.variant.arach);
  spec.set_skip(choice.variant.skip);
  if (choice.offset) spec.set_arach_offset(*choice.offset);
  return spec;
}

absl::StatusOr<arach::v1::VariantSpec> ParseVariantSpec(const std::string& variant, std::optional<double> offset) {
  arach::v1::VariantSpec spec;
  if (!variant.empty()) {
    absl::StatusOr<VariantChoice> choice = ParseVariantChoice(variant);
    if (!choice.ok()) return choice.status();
    spec = ToVariantSpec(*choice);
  }
  if (offset) spec.set_arach_offset(static_cast<float>(*offset));
  return spec;
}

}  // namespace arach::client
