#include "engine/variant/variant_mix.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace arach {

absl::StatusOr<std::vector<WeightedVariant>> ParseVariantMix(absl::string_view text) {
  std::vector<WeightedVariant> mix;
  double total = 0.0;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    std::vector<absl::string_view> parts = absl::StrSplit(entry, '=');
    for (absl::string_view& part : parts) part = absl::StripAsciiWhitespace(part);
    WeightedVariant item;
    if (parts.size() > 2 || (parts.size() == 2 && (!absl::SimpleAtod(parts[1], &item.weight) || !std::isfinite(item.weight) ||
                                                    item.weight < 0))) {
      return absl::InvalidArgumentError(absl::StrCat("\"", entry, "\" is not VARIANT[=WEIGHT] with a weight >= 0"));
    }
    absl::StatusOr<VariantChoice> choice = ParseVariantChoice(parts[0]);
    if (!choice.ok()) return choice.status();
    item.label = std::string(parts[0]);
    item.choice = *choice;
    total += item.weight;
    mix.push_back(std::move(item));
  }
  if (mix.empty()) return absl::InvalidArgumentError("no variants given (VARIANT[=WEIGHT],...)");
  if (!(total > 0)) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": the weights sum to zero"));
  return mix;
}

size_t PickWeighted(std::span<const double> weights, double uniform) {
  double total = 0.0;
  for (double w : weights) total += w;
  double point = uniform * total;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    if (point < weights[i]) return i;
    point -= weights[i];
    last_positive = i;
  }
  return last_positive;  // rounding left `point` at the very end
}

}  // namespace arach
