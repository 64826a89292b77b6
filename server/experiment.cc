#include "server/experiment.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/variant/variant_mix.h"
#include "engine/core/mapped_file.h"
#include "engine/core/random.h"
#include "engine/core/status.h"
#include "nlohmann/json.hpp"

namespace arach::server {
namespace {

absl::Status CheckArms(const Experiment& e, const std::string& source) {
  if (e.arms.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no arms"));
  for (const ExperimentArm& arm : e.arms) {
    if (!(arm.weight >= 0) || !std::isfinite(arm.weight)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": arm \"", arm.name, "\" has an invalid weight"));
    }
  }
  if (!(e.total_weight() > 0)) return absl::InvalidArgumentError(absl::StrCat(source, ": the weights sum to zero"));
  return absl::OkStatus();
}

}  // namespace

double Experiment::total_weight() const {
  double total = 0;
  for (const ExperimentArm& arm : arms) total += arm.weight;
  return total;
}

uint64_t AssignmentHash(const std::string& experiment, const std::string& key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  auto feed = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  };
  feed(experiment);
  h = (h ^ 0xff) * 0x100000001b3ull;  // separator
  feed(key);
  return Mix64(h);
}

const ExperimentArm& Experiment::Assign(const std::string& key, double uniform) const {
  const double u = key.empty() ? uniform : static_cast<double>(AssignmentHash(name, key) >> 11) * (1.0 / 9007199254740992.0);
  std::vector<double> weights;
  for (const ExperimentArm& arm : arms) weights.push_back(arm.weight);
  return arms[PickWeighted(weights, u)];
}

absl::StatusOr<Experiment> ParseExperimentSplit(const std::string& split, float default_offset) {
  absl::StatusOr<std::vector<WeightedVariant>> mix = ParseVariantMix(split);
  if (!mix.ok()) return absl::InvalidArgumentError(absl::StrCat("--experiment: ", mix.status().message()));
  Experiment e;
  for (const WeightedVariant& entry : *mix) {
    Variant variant = entry.choice.variant;
    variant.arach_offset = entry.choice.offset.value_or(default_offset);
    e.arms.push_back({entry.label, variant, entry.weight});
  }
  ARACH_RETURN_IF_ERROR(CheckArms(e, "--experiment"));
  return e;
}

absl::StatusOr<Experiment> LoadExperimentFile(const std::string& path, float default_offset) {
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  Experiment e;
  if (j.contains("name")) {
    if (!j["name"].is_string()) return absl::InvalidArgumentError(absl::StrCat(path, ": field \"name\" must be a string"));
    e.name = j["name"].get<std::string>();
  }
  if (!j.contains("arms") || !j["arms"].is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": field \"arms\" must be an array"));
  for (size_t i = 0; i < j["arms"].size(); ++i) {
    const nlohmann::json& a = j["arms"][i];
    const std::string where = absl::StrCat(path, ": arms[", i, "]");
    if (!a.is_object() || !a.contains("variant") || !a["variant"].is_string() || !a.contains("weight") || !a["weight"].is_number()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " needs a string \"variant\" and a number \"weight\""));
    }
    auto variant = ParseVariantName(a["variant"].get<std::string>());
    if (!variant.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", variant.status().message()));
    variant->arach_offset = default_offset;
    if (a.contains("arach_offset")) {
      if (!a["arach_offset"].is_number()) return absl::InvalidArgumentError(absl::StrCat(where, ": \"arach_offset\" must be a number"));
      variant->arach_offset = a["arach_offset"].get<float>();
    }
    ExperimentArm arm;
    arm.name = a.value("name", a["variant"].get<std::string>());
    arm.variant = *variant;
    arm.weight = a["weight"].get<double>();
    e.arms.push_back(arm);
  }
  ARACH_RETURN_IF_ERROR(CheckArms(e, path));
  return e;
}

}  // namespace arach::server
