#include "tests/testing/fixture_engine.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach::testing {

std::unique_ptr<Engine> MakeFixtureEngine(const std::string& model, EngineConfig config, int kv_blocks) {
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
