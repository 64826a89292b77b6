#include "tests/testing/fixture_engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/core/mapped_file.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/sentence_transformers_folder.h"

namespace arach::testing {

namespace {

std::unique_ptr<Engine> MakeEngine(const std::string& model, EngineConfig config, int kv_blocks,
                                   const decltype(FixtureOptions::make_backend)& make_backend, const std::string& folder,
                                   const std::vector<LoraModule>& loras) {
#ifdef ARACH_SANITIZED_BUILD
  // A sanitized build compiles a constraint over Qwen's 152k-token vocabulary 5-10x slower, beside other tests.
  config.constraint_compile_timeout = std::max(config.constraint_compile_timeout, std::chrono::milliseconds(180000));
#endif
  LoadModelOptions load;
  load.kv_blocks = kv_blocks;
  load.lora_modules = loras;
  const bool has_adapter = std::filesystem::exists(FixturePath(model + "/preproj.safetensors"));
  if (has_adapter) load.adapter = FixturePath(model + "/preproj.safetensors");
  load.hub_embedding = FixturePath(RefsFileFor(model)) + ":" + model + ".hub_embedding";
  absl::StatusOr<ModelBundle> bundle = LoadModelBundle(folder.empty() ? FixturePath(model) : folder, load);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok()) return nullptr;
  if (make_backend) {  // the same weights, hub embedding and adapter on the given backend
    FixtureOptions options;
    options.num_blocks = kv_blocks;
    options.block_size = load.block_size;
    options.adapter = has_adapter;
    options.device = DeviceKind::kCuda;
    options.make_backend = make_backend;
    options.model_dir = folder;
    options.lora_modules = loras;
    absl::StatusOr<std::unique_ptr<ModelRunner>> runner = LoadFixtureRunner(model, options);
    EXPECT_TRUE(runner.ok()) << runner.status();
    if (!runner.ok()) return nullptr;
    bundle->runner = std::move(*runner);
  }
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

}  // namespace

std::unique_ptr<Engine> MakeFixtureEngine(const std::string& model, EngineConfig config, int kv_blocks, const std::string& folder,
                                          const std::vector<LoraModule>& loras) {
  return MakeEngine(model, std::move(config), kv_blocks, nullptr, folder, loras);
}

std::unique_ptr<Engine> MakeFixtureEngineOn(const decltype(FixtureOptions::make_backend)& make_backend,
                                            const std::string& model, EngineConfig config, int kv_blocks, const std::string& folder,
                                            const std::vector<LoraModule>& loras) {
  return MakeEngine(model, std::move(config), kv_blocks, make_backend, folder, loras);
}

void MakePooledFixtureFolder(const std::string& model, const std::string& mode_field, const std::string& dir) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(FixturePath(model));
  ASSERT_TRUE(config.ok()) << config.status();
  for (const auto& entry : std::filesystem::directory_iterator(FixturePath(model))) {
    std::filesystem::create_symlink(entry.path(), std::filesystem::path(dir) / entry.path().filename());
  }
  std::ofstream(std::filesystem::path(dir) / "modules.json") << kSentenceTransformersModules;
  std::filesystem::create_directories(std::filesystem::path(dir) / "1_Pooling");
  std::ofstream(std::filesystem::path(dir) / "1_Pooling" / "config.json")
      << "{\"word_embedding_dimension\": " << config->hidden_size << ", \"" << mode_field << "\": true, \"include_prompt\": true}";
}

std::vector<int32_t> ValidationTokens(const Tokenizer& tokenizer) {
  absl::StatusOr<std::string> text = ReadFileToString(FixturePath("data/tinyshakespeare.txt"));
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return {};
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text->substr(text->size() * 9 / 10), false);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

EngineStats IdleStats(const Engine& engine) {
  for (int i = 0; i < 1000; ++i) {
    const EngineStats stats = engine.stats();
    if (stats.num_running == 0 && stats.num_waiting == 0 && stats.kv_blocks_used == 0) return stats;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return engine.stats();
}

}  // namespace arach::testing
