// Variant features without fixtures: a zero adapter and an ARACH offset of -inf reduce to the base model,
// the default hub embedding follows its rule, and bad adapters / hub files / requests give clear errors.
#include <cmath>
#include <limits>

#include "engine/model/adapter.h"
#include "engine/model/hub_embedding.h"
#include "tools/make_model/make_model.h"
#include "engine/model/safetensors.h"
#include "engine/bundle/model_bundle.h"
#include "engine/runner/offline_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

// Writes an adapter for `config` whose tensors are all `value` (E = 5d/4), named for `arch_prefix(i)`.
void WriteAdapter(const std::string& path, const ModelConfig& config, float value, int layers, int d_override = 0) {
  const int64_t d = d_override > 0 ? d_override : config.hidden_size, e = d * 5 / 4;
  static std::vector<float> storage;
  storage.assign(static_cast<size_t>(std::max(e * d, d * d)), value);
  std::vector<TensorToWrite> tensors;
  for (int i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.preproj.";
    tensors.push_back({p + "up_proj.weight", DType::kF32, {e, d}, storage.data()});
    tensors.push_back({p + "down_proj.weight", DType::kF32, {d, e}, storage.data()});
    tensors.push_back({p + "skip_proj.weight", DType::kF32, {d, d}, storage.data()});
  }
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
}

class LlamaWithFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions options;
    options.arch = "llama";
    options.out_dir = dir_.path() + "/model";
    auto config = MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
  }
  absl::StatusOr<ModelBundle> Load(const std::string& adapter = "", const std::string& hub = "") {
    LoadModelOptions load;
    load.adapter = adapter;
    load.hub_embedding = hub;
    return LoadModelBundle(dir_.path() + "/model", load);
  }
  testing::ScopedTempDir dir_;
  ModelConfig config_;
};

TEST_F(LlamaWithFeatures, ZeroAdapterAndHiddenHubReduceToBase) {
  WriteAdapter(dir_.File("zero.safetensors"), config_, 0.0f, config_.num_layers);
  auto model = Load(dir_.File("zero.safetensors"));
  ASSERT_TRUE(model.ok()) << model.status();
  OfflineSession session(*model->runner);
  const std::vector<int32_t> ids = {5, 17, 300, 42, 7, 9};
  auto base = session.Logits(ids);
  ASSERT_TRUE(base.ok());
  Variant skip;
  skip.skip = true;
  auto with_skip = session.Logits(ids, 0, skip);
  ASSERT_TRUE(with_skip.ok()) << with_skip.status();
  auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    float worst = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
  };
  EXPECT_LT(max_diff(*with_skip, *base), 1e-5f) << "a zero adapter must leave the model unchanged";
  Variant hidden_hub;
  hidden_hub.arach = true;
  hidden_hub.arach_offset = -1e30f;  // the hub gets zero attention weight
  auto arach = session.Logits(ids, 0, hidden_hub);
  ASSERT_TRUE(arach.ok()) << arach.status();
  EXPECT_LT(max_diff(*arach, *base), 1e-5f);
  Variant visible_hub;
  visible_hub.arach = true;
  auto changed = session.Logits(ids, 0, visible_hub);
  ASSERT_TRUE(changed.ok());
  EXPECT_GT(max_diff(*changed, *base), 1e-3f) << "with b = -0.5 the hub must change the logits";
}

TEST_F(LlamaWithFeatures, NonZeroAdapterChangesOnlySkipSequences) {
  WriteAdapter(dir_.File("a.safetensors"), config_, 0.01f, config_.num_layers);
  auto model = Load(dir_.File("a.safetensors"));
  ASSERT_TRUE(model.ok()) << model.status();
  OfflineSession session(*model->runner);
  Variant skip;
  skip.skip = true;
  auto base = session.Logits({1, 2, 3});
  auto with_skip = session.Logits({1, 2, 3}, 0, skip);
  ASSERT_TRUE(base.ok() && with_skip.ok());
  EXPECT_NE(*base, *with_skip);
}

TEST_F(LlamaWithFeatures, SkipWithoutAdapterIsFailedPrecondition) {
  auto model = Load();
  ASSERT_TRUE(model.ok());
  OfflineSession session(*model->runner);
  Variant skip;
  skip.skip = true;
  auto logits = session.Logits({1, 2, 3}, 0, skip);
  EXPECT_EQ(logits.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(logits.status().message()), HasSubstr("needs the pre-projection + skip adapter"));
  EXPECT_EQ(session.allocator().num_free(), session.allocator().num_blocks());
}

TEST_F(LlamaWithFeatures, MisfittingAdaptersAreRefusedNamingTheTensor) {
  WriteAdapter(dir_.File("wide.safetensors"), config_, 0.0f, config_.num_layers, /*d_override=*/128);
  auto wide = Load(dir_.File("wide.safetensors"));
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(std::string(wide.status().message()),
              HasSubstr("tensor \"model.layers.0.self_attn.preproj.up_proj.weight\" has shape [160, 128], expected [E, 64]"));

  WriteAdapter(dir_.File("short.safetensors"), config_, 0.0f, config_.num_layers - 1);
  auto short_adapter = Load(dir_.File("short.safetensors"));
  ASSERT_FALSE(short_adapter.ok());
  EXPECT_THAT(std::string(short_adapter.status().message()), HasSubstr("model.layers.1.self_attn.preproj.up_proj.weight"));

  WriteAdapter(dir_.File("long.safetensors"), config_, 0.0f, config_.num_layers + 1);
  auto long_adapter = Load(dir_.File("long.safetensors"));
  ASSERT_FALSE(long_adapter.ok());
  EXPECT_THAT(std::string(long_adapter.status().message()),
              HasSubstr("tensor \"model.layers.2.self_attn.preproj.down_proj.weight\" does not belong to any of the model's 2 llama layers"));
}

TEST_F(LlamaWithFeatures, HubEmbeddingFromAFileAndItsErrors) {
  std::vector<float> hub(config_.hidden_size, 0.25f), wrong(7, 0.0f);
  ASSERT_TRUE(WriteSafetensors(dir_.File("hub.safetensors"), {{"good", DType::kF32, {config_.hidden_size}, hub.data()},
                                                              {"bad", DType::kF32, {7}, wrong.data()}})
                  .ok());
  EXPECT_TRUE(Load("", dir_.File("hub.safetensors") + ":good").ok());
  auto bad = Load("", dir_.File("hub.safetensors") + ":bad");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("tensor \"bad\" has shape [7], a hub embedding must be [64]"));
  auto missing = Load("", dir_.File("hub.safetensors") + ":nope");
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("missing tensor \"nope\""));
  auto no_key = Load("", dir_.File("hub.safetensors"));
  EXPECT_THAT(std::string(no_key.status().message()), HasSubstr("must be FILE.safetensors:KEY"));
}

TEST(DefaultHubEmbedding, IsMeanPlusStdTimesSeededNoise) {
  HostTensor e;
  e.shape = {4, 3};
  e.data = {1, 10, 0, 3, 10, 0, 5, 10, 0, 7, 10, 0};  // column means 4, 10, 0; stds sqrt(20/3), 0, 0
  const std::vector<float> a = DefaultHubEmbedding(e, 0), b = DefaultHubEmbedding(e, 0), c = DefaultHubEmbedding(e, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_FLOAT_EQ(a[1], 10.0f);  // zero spread: exactly the mean
  EXPECT_FLOAT_EQ(a[2], 0.0f);
  EXPECT_NE(a[0], 4.0f);
}

TEST(VariantNames, RoundTrip) {
  for (const std::string name : {"base", "arach", "skip", "arach+skip"}) {
    auto v = ParseVariantName(name);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->Name(), name);
  }
  EXPECT_FALSE(ParseVariantName("arach+").ok());
  Variant a, b;
  a.arach = b.arach = true;
  b.arach_offset = 0.0f;
  EXPECT_NE(a.CacheKey(), b.CacheKey());
  EXPECT_EQ(b.Describe(), "arach(b=0)");
}

}  // namespace
}  // namespace arach
