// The model variant a request runs under: ARACH (hub stream) on/off with its logit offset b, and the
// pre-projection + content skip adapter on/off. It travels with the sequence through the engine and
// is part of every cache key that holds K/V (cached K/V differ between variants).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

struct Variant {
  static constexpr float kDefaultArachOffset = -0.5f;

  bool arach = false;                       // hub stream beside the tokens
  float arach_offset = kDefaultArachOffset;  // b, added to both hub logits before the softmax
  bool skip = false;                        // pre-projection + content skip adapter

  // "base", "arach", "skip" or "arach+skip" (the metric label; the offset is not part of it).
  std::string Name() const;
  // Name plus a non-default offset, e.g. "arach(b=0)".
  std::string Describe() const;
  // Distinguishes variants whose K/V differ (arach, its offset, skip).
  uint64_t CacheKey() const;

  friend bool operator==(const Variant& a, const Variant& b) {
    return a.arach == b.arach && a.skip == b.skip && (!a.arach || a.arach_offset == b.arach_offset);
  }
};

// Parses "base", "arach", "skip", "arach+skip" (also "skip+arach").
absl::StatusOr<Variant> ParseVariantName(absl::string_view name);

}  // namespace arach
