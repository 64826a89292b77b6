// A/B experiments: the traffic split between model variants. A request that sets no variant field is
// assigned an arm by a stable hash of its experiment key (the same key always gets the same arm, across
// processes and restarts); without a key, by a random draw. Explicit variant fields always win.
//
//   --experiment base=50,arach=50           arms named after their variants (VARIANT[@OFFSET][=WEIGHT])
//   --experiment_file FILE.json             {"name": "rollout-1", "arms": [{"name": "control", "variant": "base",
//                                            "weight": 50}, {"name": "treatment", "variant": "arach",
//                                            "arach_offset": -0.5, "weight": 50}]}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/variant/variant.h"

namespace arach::server {

struct ExperimentArm {
  std::string name;
  Variant variant;
  double weight = 0;
};

struct Experiment {
  std::string name = "default";  // salts the hash: another experiment reshuffles keys
  std::vector<ExperimentArm> arms;

  double total_weight() const;
  // The arm of `key` (stable); `uniform` in [0, 1) picks the arm when the key is empty.
  const ExperimentArm& Assign(const std::string& key, double uniform) const;
};

// "base=50,arach=50" (engine/variant/variant_mix.h). `default_offset` is the ARACH offset of arms that give none.
absl::StatusOr<Experiment> ParseExperimentSplit(const std::string& split, float default_offset);
// The JSON file form (see above).
absl::StatusOr<Experiment> LoadExperimentFile(const std::string& path, float default_offset);

// The stable 64-bit hash of (experiment name, key) that drives assignment (FNV-1a then a mixer).
uint64_t AssignmentHash(const std::string& experiment, const std::string& key);

}  // namespace arach::server
