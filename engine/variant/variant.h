// The model variant a request runs under: ARACH (hub stream) on/off with its logit offset b, and the
// pre-projection + content skip adapter on/off. It travels with the sequence through the engine and
// is part of every cache key that holds K/V (cached K/V differ between variants).
//
// This file is the one parser of variant names ("base", "arach", "skip", "arach+skip", with an optional
// "@OFFSET"), used by the server's flags and experiments and by the command-line clients alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/core/field_error.h"

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
  // Whether a model can run it: FAILED_PRECONDITION for the skip variants without an adapter,
  // INVALID_ARGUMENT ("arach_offset") for a non-finite offset.
  absl::Status Validate(bool has_adapter, FieldNames names = EngineFieldName) const;

  friend bool operator==(const Variant& a, const Variant& b) {
    return a.arach == b.arach && a.skip == b.skip && (!a.arach || a.arach_offset == b.arach_offset);
  }
};

// Parses "base", "arach", "skip", "arach+skip" (also "skip+arach"); the offset is the default.
absl::StatusOr<Variant> ParseVariantName(absl::string_view name);

// A variant as a person writes it: NAME[@OFFSET], e.g. "arach@0".
struct VariantChoice {
  Variant variant;               // arach_offset = *offset when given, else the default
  std::optional<float> offset;   // the offset written after '@', if any
};
absl::StatusOr<VariantChoice> ParseVariantChoice(absl::string_view text);

}  // namespace arach
