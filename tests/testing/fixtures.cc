#include "tests/testing/fixtures.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/backend/backend.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/runner/loaded_model.h"

namespace arach::testing {

std::string FixturesDir() {
  if (const char* env = std::getenv("ARACH_FIXTURES"); env != nullptr && *env != '\0') return env;
  return ARACH_FIXTURES_DIR;
}

bool HaveFixtures() {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(FixturesDir()) / "refs" / "refs.json", ec);
}

std::string FixturePath(const std::string& relative) { return (std::filesystem::path(FixturesDir()) / relative).string(); }

std::vector<std::string> FixtureServerFlags(const std::string& name) {
  return {"--model=" + FixturePath(name), "--adapter=" + FixturePath(name + "/preproj.safetensors"),
          "--arach_hub_embedding=" + FixturePath("refs/refs.safetensors") + ":" + name + ".hub_embedding"};
}

const nlohmann::json& RefsJson() {
  static const nlohmann::json* refs = [] {
    auto text = ReadFileToString(FixturePath("refs/refs.json"));
    return new nlohmann::json(nlohmann::json::parse(text.ok() ? *text : "{}"));
  }();
  return *refs;
}

const Checkpoint& RefsTensors() {
  static const Checkpoint* refs = [] {
    auto checkpoint = Checkpoint::OpenFile(FixturePath("refs/refs.safetensors"));
    if (!checkpoint.ok()) {
      ADD_FAILURE() << checkpoint.status();
      std::abort();
    }
    return checkpoint->release();
  }();
  return *refs;
}

std::vector<float> RefTensor(const std::string& name) {
  auto values = RefsTensors().ReadFloat(name);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<float>{};
}

std::vector<int32_t> RefPrompt(const std::string& model, const std::string& prompt) {
  return RefsJson()["models"][model]["prompts"][prompt].get<std::vector<int32_t>>();
}

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, const FixtureOptions& options) {
  const std::string dir = FixturePath(name);
  ARACH_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir));
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ARACH_ASSIGN_OR_RETURN(ModelWeights weights, LoadModelWeights(*checkpoint, config));
  LoadModelOptions load;
  if (options.reference_hub) load.hub_embedding = FixturePath("refs/refs.safetensors") + ":" + name + ".hub_embedding";
  if (options.adapter) load.adapter = dir + "/preproj.safetensors";
  ARACH_ASSIGN_OR_RETURN(FeatureWeights features, LoadFeatureWeights(config, weights, load));
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(options.device));
  KvCacheConfig kv;
  kv.num_blocks = options.num_blocks;
  kv.block_size = options.block_size;
  return ModelRunner::Create(std::move(backend), config, std::move(weights), std::move(features), kv);
}

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, int num_blocks, int block_size) {
  FixtureOptions options;
  options.num_blocks = num_blocks;
  options.block_size = block_size;
  return LoadFixtureRunner(name, options);
}

float MaxAbsDiff(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace arach::testing
