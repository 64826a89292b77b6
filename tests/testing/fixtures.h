// Access to ../shared/fixtures from tests. Tests that need them call ARACH_REQUIRE_FIXTURES() first,
// which skips the test with a clear message where the folder is absent.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/bundle/model_bundle.h"
#include "engine/model/checkpoint.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/offline_session.h"
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

// One model under one variant of its references, the parameter of the conformance suites.
struct RefCase {
  std::string model;    // "gpt2-tiny", "qwen3-tiny", ...
  std::string variant;  // the variant's name in the references
};
void PrintTo(const RefCase& c, std::ostream* os);
// "gpt2_tiny_arach": the case's test-name suffix.
std::string RefCaseName(const ::testing::TestParamInfo<RefCase>& info);
// Every model and variant the references hold: gpt2-tiny and neox-tiny under all five variants,
// llama-stories260k (no adapter) under base, arach and arach_b0, and with `modern` qwen3-tiny, qwen2-tiny
// and llama3-tiny under all five.
std::vector<RefCase> ReferenceCases(bool modern);

// The variant a reference name stands for: "base", "arach", "arach_b0" (offset 0), "skip", "arach_skip".
Variant VariantOfRef(const std::string& ref_name);

// The validation token ids the references' perplexity was computed on: refs_modern.json's val_ids for the
// modern models; for the classic ones the model's tokens of the last 10% of data/tinyshakespeare.txt
// (llama-stories260k: its greedy story from BOS, six times).
absl::StatusOr<std::vector<int32_t>> ValidationIds(const std::string& model);

// How a fixture model is loaded for a test.
struct FixtureOptions {
  int num_blocks = 256;
  int block_size = 16;
  bool reference_hub = true;  // use the references' hub embedding (refs.safetensors "<model>.hub_embedding")
  bool adapter = false;       // load <model>/preproj.safetensors
  DeviceKind device = DeviceKind::kCpu;
  WeightDTypeChoice weight_dtype = WeightDTypeChoice::kF32;  // the CPU backend's weight matrices
  KvDTypeChoice kv_cache_dtype = KvDTypeChoice::kAuto;  // float32 beside the default float32 weights
  std::string model_dir;  // load this folder (a converted copy of the fixture) instead of the fixture's own
  std::vector<LoraModule> lora_modules;  // LoRA adapters loaded beside the model
  // Makes the backend instead of CreateBackend(device, ...) (the cuda-sim suites' simulated CUDA backend).
  std::function<absl::StatusOr<std::unique_ptr<Backend>>(const BackendOptions&)> make_backend;
};

// Loads fixture model `name` (e.g. "gpt2-tiny") onto options.device (the CPU backend by default).
absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, const FixtureOptions& options = {});
absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, int num_blocks, int block_size = 16);

// log p(ids[t] | ids[<t]) for t = 1..T-1 from the forward's logits of every position (prefilled `chunk`
// tokens per step): the reference that the engine's score requests are checked against.
absl::StatusOr<std::vector<double>> TokenLogProbs(OfflineSession& session, const std::vector<int32_t>& ids, int chunk = 512,
                                                  const Variant& variant = {});

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
