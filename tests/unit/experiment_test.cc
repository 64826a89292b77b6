// A/B assignment: stable per key (also across processes: the hash is fixed), matching the configured
// split within statistical bounds, explicit variants always win.
#include "server/experiment.h"

#include <cmath>
#include <fstream>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/variant_resolver.h"
#include "tests/testing/temp_dir.h"

namespace arach::server {
namespace {

TEST(Experiment, TheHashIsFixedAcrossProcessesAndVersions) {
  // Golden values: changing the hash would reshuffle every user's arm in a running experiment.
  // (Computed independently: FNV-1a 64 of name, 0xff, key, then the splitmix64 finaliser.)
  EXPECT_EQ(AssignmentHash("default", "user-42"), 0x5d141b6623a0d6b6ull);
  EXPECT_EQ(AssignmentHash("rollout-1", "alice"), 0x15a47c64c6840a0eull);
  EXPECT_NE(AssignmentHash("default", "user-42"), AssignmentHash("other", "user-42"));
}

TEST(Experiment, SameKeySameArmAndTheSplitHolds) {
  auto e = ParseExperimentSplit("base=30,arach=70", -0.5f);
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, int> counts;
  constexpr int kKeys = 100000;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "user-" + std::to_string(i);
    const ExperimentArm& arm = e->Assign(key, 0.99);
    EXPECT_EQ(&arm, &e->Assign(key, 0.01)) << "the draw must not matter when there is a key";
    ++counts[arm.name];
  }
  // Binomial(100000, 0.3): sd ~ 145; allow 5 sd.
  EXPECT_NEAR(counts["base"], 30000, 5 * std::sqrt(kKeys * 0.3 * 0.7));
  EXPECT_NEAR(counts["arach"], 70000, 5 * std::sqrt(kKeys * 0.3 * 0.7));
  EXPECT_TRUE(e->arms[1].variant.arach);
  EXPECT_EQ(e->arms[1].variant.arach_offset, -0.5f);
}

TEST(Experiment, KeylessRequestsFollowTheDraw) {
  auto e = ParseExperimentSplit("base=1,skip=1", -0.5f);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Assign("", 0.25).name, "base");
  EXPECT_EQ(e->Assign("", 0.75).name, "skip");
}

TEST(Experiment, ExplicitVariantsWin) {
  auto e = ParseExperimentSplit("arach=100", -0.5f);
  ASSERT_TRUE(e.ok());
  Variant base;
  const VariantResolver resolver(base, *e);
  const RequestedVariant none{.experiment_key = "k"};
  EXPECT_TRUE(resolver.Resolve(none).variant.arach);
  EXPECT_EQ(resolver.Resolve(none).arm, "arach");
  const RequestedVariant explicit_base{.arach = false, .experiment_key = "k"};
  const ResolvedVariant r = resolver.Resolve(explicit_base);
  EXPECT_FALSE(r.variant.arach);
  EXPECT_EQ(r.arm, "") << "no arm when the request chose";
  const RequestedVariant offset_only{.arach_offset = 0.0f, .experiment_key = "k"};
  EXPECT_EQ(resolver.Resolve(offset_only).variant.arach_offset, 0.0f) << "an explicit offset applies to the assigned arm";
}

TEST(Experiment, FileFormAndErrors) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("e.json")) << R"({"name": "rollout-1", "arms": [
      {"name": "control", "variant": "base", "weight": 50},
      {"name": "treatment", "variant": "arach", "arach_offset": 0.0, "weight": 50}]})";
  auto e = LoadExperimentFile(dir.File("e.json"), -0.5f);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->name, "rollout-1");
  EXPECT_EQ(e->arms[1].name, "treatment");
  EXPECT_EQ(e->arms[1].variant.arach_offset, 0.0f);
  EXPECT_THAT(std::string(ParseExperimentSplit("base=x", -0.5f).status().message()), ::testing::HasSubstr("VARIANT[=WEIGHT]"));
  EXPECT_THAT(std::string(ParseExperimentSplit("beta=1", -0.5f).status().message()), ::testing::HasSubstr("beta"));
  EXPECT_FALSE(ParseExperimentSplit("base=0,arach=0", -0.5f).ok());
  std::ofstream(dir.File("bad.json")) << R"({"arms": [{"variant": "arach"}]})";
  EXPECT_THAT(std::string(LoadExperimentFile(dir.File("bad.json"), -0.5f).status().message()), ::testing::HasSubstr("arms[0]"));
}

}  // namespace
}  // namespace arach::server
