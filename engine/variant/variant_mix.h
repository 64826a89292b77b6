// Weighted lists of variants, "VARIANT[=WEIGHT],...", and the weighted draw over them: the one parser and
// one draw behind the server's --experiment split and arach-cli's --split (ab) and --variant_mix (bench).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/variant/variant.h"

namespace arach {

struct WeightedVariant {
  std::string label;     // the variant as written (e.g. "arach@0"): arm and report name
  VariantChoice choice;
  double weight = 1.0;   // >= 0; 1 when the entry gives none
};

// Parses "base=50,arach@0=50" (entries NAME[@OFFSET][=WEIGHT]); at least one entry, weights >= 0 and
// finite with a positive sum. Errors name the entry.
absl::StatusOr<std::vector<WeightedVariant>> ParseVariantMix(absl::string_view text);

// The index i with cumulative weight up to i covering `uniform` (in [0, 1)) x the total; weights >= 0 with
// a positive sum. The same uniform always gives the same index.
size_t PickWeighted(std::span<const double> weights, double uniform);

}  // namespace arach
