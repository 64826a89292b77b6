#include "tests/testing/fixtures.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/backend/backend.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

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

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, int num_blocks, int block_size) {
  const std::string dir = FixturePath(name);
  ARACH_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir));
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ARACH_ASSIGN_OR_RETURN(ModelWeights weights, LoadModelWeights(*checkpoint, config));
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(DeviceKind::kCpu));
  KvCacheConfig kv;
  kv.num_blocks = num_blocks;
  kv.block_size = block_size;
  return ModelRunner::Create(std::move(backend), config, std::move(weights), kv);
}

float MaxAbsDiff(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace arach::testing
