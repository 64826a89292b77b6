#include "engine/features/variant.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace arach {

std::string Variant::Name() const {
  if (arach && skip) return "arach+skip";
  if (arach) return "arach";
  if (skip) return "skip";
  return "base";
}

std::string Variant::Describe() const {
  if (!arach || arach_offset == kDefaultArachOffset) return Name();
  return absl::StrCat(Name(), "(b=", arach_offset, ")");
}

uint64_t Variant::CacheKey() const {
  uint32_t offset_bits = 0;
  if (arach) std::memcpy(&offset_bits, &arach_offset, sizeof(offset_bits));
  return (static_cast<uint64_t>(offset_bits) << 2) | (arach ? 1u : 0u) | (skip ? 2u : 0u);
}

absl::StatusOr<Variant> ParseVariantName(absl::string_view name) {
  Variant v;
  if (name == "base") return v;
  if (name == "arach") {
    v.arach = true;
    return v;
  }
  if (name == "skip") {
    v.skip = true;
    return v;
  }
  if (name == "arach+skip" || name == "skip+arach") {
    v.arach = v.skip = true;
    return v;
  }
  return absl::InvalidArgumentError(absl::StrCat("variant \"", name, "\" is not one of base, arach, skip, arach+skip"));
}

}  // namespace arach
