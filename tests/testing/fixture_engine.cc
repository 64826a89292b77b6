#include "tests/testing/fixture_engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach::testing {

std::unique_ptr<Engine> MakeFixtureEngine(const std::string& model, EngineConfig config, int kv_blocks) {
#ifdef ARACH_SANITIZED_BUILD
  // A sanitized build compiles a constraint over Qwen's 152k-token vocabulary 5-10x slower, beside other tests.
  config.constraint_compile_timeout = std::max(config.constraint_compile_timeout, std::chrono::milliseconds(180000));
#endif
  LoadModelOptions load;
  load.kv_blocks = kv_blocks;
  if (const std::string adapter = FixturePath(model + "/preproj.safetensors"); std::filesystem::exists(adapter)) {
    load.adapter = adapter;
  }
  load.hub_embedding = FixturePath(RefsFileFor(model)) + ":" + model + ".hub_embedding";
  absl::StatusOr<ModelBundle> bundle = LoadModelBundle(FixturePath(model), load);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

}  // namespace arach::testing
