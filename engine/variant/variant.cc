#include "engine/variant/variant.h"

#include <cmath>
#include <cstring>

#include "absl/strings/numbers.h"
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

absl::Status Variant::Validate(bool has_adapter, FieldNames names) const {
  if (skip && !has_adapter) {
    return absl::FailedPreconditionError(absl::StrCat(names("variant"), ": ", Name(),
                                                      " needs the pre-projection + skip adapter; the model was loaded "
                                                      "without one (--adapter FILE)"));
  }
  // A non-finite offset is malformed even where ARACH is off and it goes unused (a client's NaN is an error).
  if (!std::isfinite(arach_offset)) return InvalidField(names, "arach_offset", absl::StrCat(arach_offset, " is not finite"));
  return absl::OkStatus();
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

absl::StatusOr<VariantChoice> ParseVariantChoice(absl::string_view text) {
  const size_t at = text.find('@');
  absl::StatusOr<Variant> variant = ParseVariantName(text.substr(0, at));
  if (!variant.ok()) return variant.status();
  VariantChoice choice{*variant, std::nullopt};
  if (at != absl::string_view::npos) {
    float offset;
    if (!absl::SimpleAtof(text.substr(at + 1), &offset) || !std::isfinite(offset)) {
      return absl::InvalidArgumentError(absl::StrCat("variant \"", text, "\": the offset after @ is not a finite number"));
    }
    choice.offset = offset;
    choice.variant.arach_offset = offset;
  }
  return choice;
}

}  // namespace arach
