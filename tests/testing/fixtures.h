// Access to ../shared/fixtures from tests. Tests that need them call ARACH_REQUIRE_FIXTURES() first,
// which skips the test with a clear message where the folder is absent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/checkpoint.h"
#include "engine/runner/model_runner.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace arach::testing {

// The fixtures folder (ARACH_FIXTURES env var, else the configured ../shared/fixtures).
std::string FixturesDir();
bool HaveFixtures();
// `<fixtures>/<relative>`.
std::string FixturePath(const std::string& relative);
// arach-server flags that serve fixture model `name` with its adapter and the references' hub embedding,
// so that every variant of refs.safetensors can be requested.
std::vector<std::string> FixtureServerFlags(const std::string& name);

// The models whose references are in refs/refs_modern.* (qwen3-tiny, qwen2-tiny, llama3-tiny).
bool IsModernModel(const std::string& model);
// refs/refs.safetensors or refs/refs_modern.safetensors: where `model`'s references (and hub embedding) are.
std::string RefsFileFor(const std::string& model);

// refs/refs.json and refs/refs_modern.json, parsed once; the one that describes `model`.
const nlohmann::json& RefsJson();
const nlohmann::json& ModernRefsJson();
const nlohmann::json& RefsJsonFor(const std::string& model);
// refs/sink_refs.json: attention-sink references (models.<model>.<prompt>.{ids, base, arach}).
const nlohmann::json& SinkRefsJson();
// refs/refs.safetensors, opened once.
const Checkpoint& RefsTensors();
// A reference tensor as float32 (from refs.safetensors or refs_modern.safetensors), and whether it exists.
std::vector<float> RefTensor(const std::string& name);
bool HasRefTensor(const std::string& name);
// A prompt of the model's refs json: models.<model>.prompts.<prompt>.
std::vector<int32_t> RefPrompt(const std::string& model, const std::string& prompt);

// How a fixture model is loaded for a test.
struct FixtureOptions {
  int num_blocks = 256;
  int block_size = 16;
  bool reference_hub = true;  // use the references' hub embedding (refs.safetensors "<model>.hub_embedding")
  bool adapter = false;       // load <model>/preproj.safetensors
  DeviceKind device = DeviceKind::kCpu;
};

// Loads fixture model `name` (e.g. "gpt2-tiny") onto options.device (the CPU backend by default).
absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, const FixtureOptions& options = {});
absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, int num_blocks, int block_size = 16);

// Largest |a[i] - b[i]|.
float MaxAbsDiff(const float* a, const float* b, size_t n);

}  // namespace arach::testing

#define ARACH_REQUIRE_FIXTURES()                                                               \
  do {                                                                                         \
    if (!::arach::testing::HaveFixtures()) {                                                   \
      GTEST_SKIP() << "conformance fixtures not found at " << ::arach::testing::FixturesDir() \
                   << " (set ARACH_FIXTURES or place ../shared/fixtures beside the project)"; \
    }                                                                                          \
  } while (0)
