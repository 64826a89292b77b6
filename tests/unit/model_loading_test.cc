// make-model checkpoints of every family load and run; broken checkpoints and bad token ids give
// errors that name the file, tensor or value.
#include <filesystem>
#include <fstream>

#include "engine/backend/backend.h"
#include "engine/model/checkpoint.h"
#include "tools/make_model/make_model.h"
#include "engine/model/model_weights.h"
#include "engine/bundle/model_bundle.h"
#include "engine/runner/offline_session.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadRunner(const std::string& dir) {
  auto config = LoadModelConfig(dir);
  if (!config.ok()) return config.status();
  auto checkpoint = Checkpoint::Open(dir);
  if (!checkpoint.ok()) return checkpoint.status();
  auto weights = LoadModelWeights(**checkpoint, *config);
  if (!weights.ok()) return weights.status();
  auto features = LoadFeatureWeights(*config, *weights, LoadModelOptions{});
  if (!features.ok()) return features.status();
  auto backend = CreateBackend(DeviceKind::kCpu);
  if (!backend.ok()) return backend.status();
  return ModelRunner::Create(std::move(*backend), *config, std::move(*weights), std::move(*features), KvCacheConfig{16, 64});
}

// Rewrites dir/model.safetensors through `edit`, which may drop (return false) or change a tensor.
void RewriteWeights(const std::string& dir, const std::function<bool(TensorToWrite&)>& edit) {
  const std::string path = dir + "/model.safetensors";
  std::vector<std::vector<unsigned char>> storage;
  std::vector<TensorToWrite> tensors;
  {
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    for (const auto& [name, info] : (*file)->tensors()) {
      storage.emplace_back(info.data, info.data + info.num_bytes);
      TensorToWrite t{name, info.dtype, info.shape, nullptr};
      if (!edit(t)) {
        storage.pop_back();
        continue;
      }
      if (t.data == nullptr) t.data = storage.back().data();
      tensors.push_back(t);
    }
  }
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
}

class MakeModelFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(MakeModelFamilies, LoadsAndGeneratesFromText) {
  testing::ScopedTempDir dir;
  MakeModelOptions options;
  options.arch = GetParam();
  options.preset = "tiny";
  options.out_dir = dir.path();
  options.seed = 7;
  auto config = MakeModel(options);
  ASSERT_TRUE(config.ok()) << config.status();
  auto runner = LoadRunner(dir.path());
  ASSERT_TRUE(runner.ok()) << runner.status();
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->vocab_size(), config->vocab_size);
  auto ids = (*tokenizer)->Encode("the quick brown fox", false);
  ASSERT_TRUE(ids.ok());
  auto back = (*tokenizer)->Decode(*ids, false);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "the quick brown fox");

  OfflineSession session(**runner);
  GreedyOptions greedy;
  greedy.max_new_tokens = 8;
  auto out = session.GenerateGreedy({*ids}, greedy);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].size(), 8u);
  // Same seed, same checkpoint: the logits are reproducible bit for bit.
  auto first = session.Logits(*ids);
  testing::ScopedTempDir again;
  options.out_dir = again.path();
  ASSERT_TRUE(MakeModel(options).ok());
  auto runner2 = LoadRunner(again.path());
  ASSERT_TRUE(runner2.ok());
  OfflineSession session2(**runner2);
  auto second = session2.Logits(*ids);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
}

INSTANTIATE_TEST_SUITE_P(Families, MakeModelFamilies, ::testing::Values("gpt2", "gpt_neox", "llama"));

class BrokenCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions options;
    options.arch = "gpt2";
    options.out_dir = dir_.path();
    ASSERT_TRUE(MakeModel(options).ok());
  }
  testing::ScopedTempDir dir_;
};

TEST_F(BrokenCheckpoint, MissingTensorIsNamed) {
  RewriteWeights(dir_.path(), [](TensorToWrite& t) { return t.name != "h.1.mlp.c_fc.bias"; });
  auto runner = LoadRunner(dir_.path());
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(runner.status().message()), HasSubstr("missing tensor \"h.1.mlp.c_fc.bias\""));
}

TEST_F(BrokenCheckpoint, WrongShapeIsNamedWithBothShapes) {
  static const std::vector<float> zeros(64 * 64 * 3, 0.0f);
  RewriteWeights(dir_.path(), [](TensorToWrite& t) {
    if (t.name == "h.0.attn.c_attn.weight") {
      t.shape = {64 * 3, 64};  // nn.Linear layout where GPT-2's Conv1D [in, out] is expected
      t.dtype = DType::kF32;
      t.data = zeros.data();
    }
    return true;
  });
  auto runner = LoadRunner(dir_.path());
  ASSERT_FALSE(runner.ok());
  EXPECT_THAT(std::string(runner.status().message()),
              HasSubstr("model.safetensors: tensor \"h.0.attn.c_attn.weight\" has shape [192, 64], expected [64, 192]"));
}

TEST_F(BrokenCheckpoint, UnsupportedDtypeIsNamed) {
  static const std::vector<int32_t> ints(64, 1);
  RewriteWeights(dir_.path(), [](TensorToWrite& t) {
    if (t.name == "ln_f.weight") {
      t.dtype = DType::kI32;
      t.data = ints.data();
    }
    return true;
  });
  auto runner = LoadRunner(dir_.path());
  ASSERT_FALSE(runner.ok());
  EXPECT_THAT(std::string(runner.status().message()), HasSubstr("tensor \"ln_f.weight\" has dtype I32"));
}

TEST_F(BrokenCheckpoint, TruncatedFileIsNamed) {
  const std::string path = dir_.path() + "/model.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  auto runner = LoadRunner(dir_.path());
  ASSERT_FALSE(runner.ok());
  EXPECT_THAT(std::string(runner.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(runner.status().message()), HasSubstr("file truncated?"));
}

TEST_F(BrokenCheckpoint, UnknownModelTypeIsNamed) {
  std::ofstream(dir_.path() + "/config.json") << R"({"model_type": "t5", "d_model": 64})";
  auto runner = LoadRunner(dir_.path());
  ASSERT_FALSE(runner.ok());
  EXPECT_THAT(std::string(runner.status().message()), HasSubstr("field \"model_type\" \"t5\" is not supported"));
}

TEST(ForwardInput, TokenIdsOutOfRangeAndOverlongSequencesAreRefused) {
  testing::ScopedTempDir dir;
  MakeModelOptions options;
  options.arch = "llama";
  options.out_dir = dir.path();
  auto config = MakeModel(options);
  ASSERT_TRUE(config.ok());
  auto runner = LoadRunner(dir.path());
  ASSERT_TRUE(runner.ok());
  OfflineSession session(**runner);
  auto bad = session.Logits({1, 2, config->vocab_size});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("sequences[0][2]: token id 1024 is outside the vocabulary [0, 1024)"));
  auto negative = session.Logits({-5});
  EXPECT_THAT(std::string(negative.status().message()), HasSubstr("token id -5"));
  auto overlong = session.Logits(std::vector<int32_t>(config->max_positions + 1, 3));
  EXPECT_THAT(std::string(overlong.status().message()), HasSubstr("exceed the model's context"));
  EXPECT_EQ(session.allocator().num_free(), session.allocator().num_blocks());
}

}  // namespace
}  // namespace arach
