// Loading PEFT LoRA adapters (engine/model/lora_adapter.h): the mapping onto the engine's fused projections, the
// scale rules, every refusal naming its file and field or tensor, and the --lora_modules flag.
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/bundle/model_bundle.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/safetensors.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

// A small Llama: d = 8, 2 query heads and 1 KV head of 4 (q 8, k 4, v 4: QKV 16 rows), MLP 12 (gate; up: 24 rows).
ModelConfig SmallLlama() {
  absl::StatusOr<ModelConfig> config = ParseModelConfig(R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
      "num_key_value_heads": 1, "intermediate_size": 12, "num_hidden_layers": 2, "vocab_size": 16,
      "max_position_embeddings": 64, "rms_norm_eps": 1e-5})", "config.json");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

constexpr char kGoodConfig[] = R"({"peft_type": "LORA", "r": 2, "lora_alpha": 6, "bias": "none", "use_dora": false,
    "modules_to_save": null, "target_modules": ["q_proj", "v_proj", "k_proj"]})";

class LoraFolder : public ::testing::Test {
 protected:
  // A tensor whose values are `first`, first + 1, ...
  void Add(const std::string& name, std::vector<int64_t> shape, float first = 1) {
    int64_t count = 1;
    for (int64_t n : shape) count *= n;
    std::vector<float>& values = storage_.emplace_back(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[i] = first + static_cast<float>(i);
    tensors_.push_back({name, DType::kF32, std::move(shape), values.data()});
  }
  void AddModule(const std::string& module, int64_t r, int64_t in, int64_t out) {
    Add("base_model.model." + module + ".lora_A.weight", {r, in});
    Add("base_model.model." + module + ".lora_B.weight", {out, r}, 100);
  }
  absl::StatusOr<LoraAdapter> Load(const std::string& config = kGoodConfig) {
    std::ofstream(dir_.File("adapter_config.json")) << config;
    EXPECT_TRUE(WriteSafetensors(dir_.File("adapter_model.safetensors"), tensors_).ok());
    return LoadLoraAdapter("tuned", dir_.path(), SmallLlama());
  }
  // The load fails with INVALID_ARGUMENT naming `file` and every one of `words`.
  void ExpectRefused(const std::vector<std::string>& words, const std::string& file = "adapter_model.safetensors",
                     const std::string& config = kGoodConfig) {
    const absl::StatusOr<LoraAdapter> adapter = Load(config);
    ASSERT_FALSE(adapter.ok());
    EXPECT_EQ(adapter.status().code(), absl::StatusCode::kInvalidArgument) << adapter.status();
    EXPECT_NE(adapter.status().message().find(file), std::string::npos) << adapter.status();
    for (const std::string& word : words) EXPECT_NE(adapter.status().message().find(word), std::string::npos) << adapter.status();
  }

  testing::ScopedTempDir dir_;
  std::deque<std::vector<float>> storage_;
  std::vector<TensorToWrite> tensors_;
};

TEST_F(LoraFolder, PartsLandInTheirRowsAndColumnsOfTheFusedProjections) {
  AddModule("model.layers.0.self_attn.q_proj", 2, 8, 8);
  AddModule("model.layers.0.self_attn.v_proj", 3, 8, 4);  // another rank (PEFT's rank_pattern)
  AddModule("model.layers.1.mlp.up_proj", 2, 8, 12);
  AddModule("model.layers.1.self_attn.o_proj", 1, 8, 8);
  const absl::StatusOr<LoraAdapter> adapter = Load();
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  EXPECT_EQ(adapter->name, "tuned");
  EXPECT_EQ(adapter->max_rank, 3);
  EXPECT_EQ(adapter->modules, (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                                                        "model.layers.1.mlp.up_proj", "model.layers.1.self_attn.o_proj"}));
  ASSERT_EQ(adapter->layers.size(), 2u);
  const LoraProjection& qkv = adapter->layers[0].sites[static_cast<int>(LoraSite::kQkv)];
  ASSERT_EQ(qkv.a.shape, (std::vector<int64_t>{5, 8}));   // q's 2 rows of A, then v's 3
  ASSERT_EQ(qkv.b.shape, (std::vector<int64_t>{16, 5}));  // QKV rows x both ranks
  EXPECT_EQ(qkv.a.data[0], 1);                            // q's A[0][0]
  EXPECT_EQ(qkv.a.data[2 * 8], 1);                        // v's A[0][0]
  const auto b = [&](int row, int col) { return qkv.b.data[row * 5 + col]; };
  EXPECT_FLOAT_EQ(b(0, 0), 100 * 3.0f);          // q's B[0][0] * alpha / r = 6 / 2
  EXPECT_FLOAT_EQ(b(7, 1), (100 + 15) * 3.0f);   // q's B[7][1]
  EXPECT_EQ(b(0, 2), 0);                         // q's rows, v's columns
  for (int row = 8; row < 12; ++row) {           // k's rows: untouched
    for (int col = 0; col < 5; ++col) EXPECT_EQ(b(row, col), 0);
  }
  EXPECT_FLOAT_EQ(b(12, 2), 100 * 2.0f);         // v's B[0][0] * 6 / 3
  EXPECT_EQ(b(12, 0), 0);
  EXPECT_TRUE(adapter->layers[0].sites[static_cast<int>(LoraSite::kOut)].empty());
  const LoraProjection& mlp_in = adapter->layers[1].sites[static_cast<int>(LoraSite::kMlpIn)];
  ASSERT_EQ(mlp_in.b.shape, (std::vector<int64_t>{24, 2}));  // [gate; up]: up's rows are the second half
  EXPECT_EQ(mlp_in.b.data[0], 0);
  EXPECT_FLOAT_EQ(mlp_in.b.data[12 * 2], 100 * 3.0f);
  const LoraProjection& out = adapter->layers[1].sites[static_cast<int>(LoraSite::kOut)];
  ASSERT_EQ(out.b.shape, (std::vector<int64_t>{8, 1}));
  EXPECT_FLOAT_EQ(out.b.data[0], 100 * 6.0f);  // alpha / r = 6 / 1
  EXPECT_EQ(adapter->parameter_count(), 5u * 8 + 16 * 5 + 2 * 8 + 24 * 2 + 8 + 8);
}

TEST_F(LoraFolder, RsLoraScalesByTheSquareRootOfTheRank) {
  AddModule("model.layers.0.self_attn.o_proj", 4, 8, 8);
  const absl::StatusOr<LoraAdapter> adapter = Load(R"({"r": 4, "lora_alpha": 6, "use_rslora": true})");
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  EXPECT_FLOAT_EQ(adapter->layers[0].sites[static_cast<int>(LoraSite::kOut)].b.data[0], 100 * 3.0f);  // 6 / sqrt(4)
}

TEST_F(LoraFolder, ConfigFieldsItCannotServeAreRefusedByName) {
  AddModule("model.layers.0.self_attn.q_proj", 2, 8, 8);
  const std::string file = "adapter_config.json";
  ExpectRefused({"not valid JSON"}, file, "{");
  ExpectRefused({"\"peft_type\"", "PREFIX_TUNING"}, file, R"({"peft_type": "PREFIX_TUNING", "r": 2})");
  ExpectRefused({"\"r\""}, file, R"({"lora_alpha": 2})");
  ExpectRefused({"\"r\""}, file, R"({"r": 0})");
  ExpectRefused({"\"r\""}, file, R"({"r": 2.5})");
  ExpectRefused({"\"lora_alpha\""}, file, R"({"r": 2, "lora_alpha": "8"})");
  ExpectRefused({"\"use_dora\"", "DoRA"}, file, R"({"r": 2, "use_dora": true})");
  ExpectRefused({"\"use_rslora\""}, file, R"({"r": 2, "use_rslora": 1})");
  ExpectRefused({"\"bias\"", "all"}, file, R"({"r": 2, "bias": "all"})");
  ExpectRefused({"\"lora_bias\""}, file, R"({"r": 2, "lora_bias": true})");
  ExpectRefused({"\"modules_to_save\""}, file, R"({"r": 2, "modules_to_save": ["lm_head"]})");
  ExpectRefused({"\"alpha_pattern\""}, file, R"({"r": 2, "alpha_pattern": {"q_proj": 4}})");
  ExpectRefused({"not a JSON object"}, file, "[]");
}

TEST_F(LoraFolder, TheLmHeadIsRefusedNamingTheTensor) {
  AddModule("lm_head", 2, 8, 16);
  ExpectRefused({"base_model.model.lm_head.lora_A.weight", "LM head"});
}

TEST_F(LoraFolder, ALayerTheModelLacksIsRefused) {
  AddModule("model.layers.2.self_attn.q_proj", 2, 8, 8);
  ExpectRefused({"model.layers.2.self_attn.q_proj", "2 layers"});
}

TEST_F(LoraFolder, AModuleThatIsNoProjectionIsRefused) {
  AddModule("model.layers.0.self_attn.rotary_emb", 2, 8, 8);
  ExpectRefused({"rotary_emb", "not an attention or MLP projection"});
}

TEST_F(LoraFolder, AnAWithoutItsBIsRefused) {
  Add("base_model.model.model.layers.0.mlp.down_proj.lora_A.weight", {2, 12});
  ExpectRefused({"model.layers.0.mlp.down_proj", "no lora_B"});
}

TEST_F(LoraFolder, ShapesThatDoNotFitTheModelAreRefused) {
  AddModule("model.layers.0.mlp.down_proj", 2, 8, 8);  // down_proj reads the MLP's 12 columns
  ExpectRefused({"down_proj.lora_A.weight", "[2, 8]", "[r, 12]"});
}

TEST_F(LoraFolder, ABWhoseRankDiffersFromItsAIsRefused) {
  Add("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {2, 8});
  Add("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", {8, 3});
  ExpectRefused({"q_proj.lora_B.weight", "[8, 3]"});
}

TEST_F(LoraFolder, TensorsThatAreNoLoraWeightsAreRefused) {
  AddModule("model.layers.0.self_attn.q_proj", 2, 8, 8);
  Add("base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector", {8});
  ExpectRefused({"lora_magnitude_vector", "DoRA"});
}

TEST_F(LoraFolder, WeightsWithoutPeftsPrefixAreRefused) {
  Add("model.layers.0.self_attn.q_proj.lora_A.weight", {2, 8});
  Add("model.layers.0.self_attn.q_proj.lora_B.weight", {8, 2});
  ExpectRefused({"base_model.model.MODULE"});
}

TEST_F(LoraFolder, AnEmptyAdapterIsRefused) { ExpectRefused({"no LoRA weights"}); }

TEST_F(LoraFolder, APickledAdapterIsRefusedSayingHowToSaveIt) {
  std::ofstream(dir_.File("adapter_config.json")) << kGoodConfig;
  std::ofstream(dir_.File("adapter_model.bin")) << "pickle";
  const absl::StatusOr<LoraAdapter> adapter = LoadLoraAdapter("tuned", dir_.path(), SmallLlama());
  ASSERT_FALSE(adapter.ok());
  EXPECT_NE(adapter.status().message().find("adapter_model.bin"), std::string::npos) << adapter.status();
  EXPECT_NE(adapter.status().message().find("safe_serialization"), std::string::npos) << adapter.status();
}

TEST_F(LoraFolder, TheShapeBoundIsWhatAnAdapterOfEveryModuleAtThatRankHolds) {
  // SmallLlama at r = 2, every projection of both layers: q 8->8, k 8->4, v 8->4, o 8->8, gate and up 8->12, down 12->8.
  for (int layer = 0; layer < 2; ++layer) {
    const std::string at = "model.layers." + std::to_string(layer) + ".";
    AddModule(at + "self_attn.q_proj", 2, 8, 8);
    AddModule(at + "self_attn.k_proj", 2, 8, 4);
    AddModule(at + "self_attn.v_proj", 2, 8, 4);
    AddModule(at + "self_attn.o_proj", 2, 8, 8);
    AddModule(at + "mlp.gate_proj", 2, 8, 12);
    AddModule(at + "mlp.up_proj", 2, 8, 12);
    AddModule(at + "mlp.down_proj", 2, 12, 8);
  }
  const absl::StatusOr<LoraAdapter> adapter = Load(R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": "all-linear"})");
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  // Per layer: QKV A [6, 8] + B [16, 6], out [2, 8] + [8, 2], MLP in [4, 8] + [24, 4], MLP out [2, 12] + [8, 2].
  const auto parameters = [](int rank) {
    int64_t per_layer = 0;
    for (const LoraSiteShape& s : LoraSiteShapesBound(SmallLlama(), rank)) per_layer += s.rank * (s.in + s.out);
    return 2 * per_layer;
  };
  EXPECT_EQ(parameters(2), 2 * (144 + 32 + 128 + 40));
  EXPECT_EQ(static_cast<int64_t>(adapter->parameter_count()), parameters(2));
  EXPECT_EQ(parameters(4), 2 * parameters(2));
}

TEST_F(LoraFolder, AnAdapterAboveTheRankLimitIsRefusedNamingItsFolderAndTheFlag) {
  AddModule("model.layers.0.self_attn.q_proj", 2, 8, 8);
  const absl::StatusOr<LoraAdapter> adapter = Load();
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  EXPECT_TRUE(CheckLoraRank(*adapter, LoraLimits{}).ok()) << "0: no bound";
  EXPECT_TRUE(CheckLoraRank(*adapter, LoraLimits{.max_rank = 2}).ok());
  const absl::Status refused = CheckLoraRank(*adapter, LoraLimits{.max_rank = 1});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), dir_.path() + ": rank 2 exceeds --max_lora_rank 1 (the largest rank this server keeps memory for)");
}

TEST(LoraFolderMissing, NamesTheFileItLacks) {
  const absl::StatusOr<LoraAdapter> adapter = LoadLoraAdapter("tuned", "/nonexistent/adapter", SmallLlama());
  ASSERT_FALSE(adapter.ok());
  EXPECT_NE(adapter.status().message().find("/nonexistent/adapter/adapter_config.json"), std::string::npos) << adapter.status();
}

TEST(LoraName, RefusesEmptyNamesAndTheSeparators) {
  EXPECT_TRUE(CheckLoraName("sql-v2_b.1").ok());
  EXPECT_EQ(CheckLoraName("").message(), "required (a non-empty name)");
  for (const char* name : {"a:arach", "a,b", ":", ","}) {
    EXPECT_EQ(CheckLoraName(name).message(), "must not contain ':' (NAME:VARIANT names a variant) or ','") << name;
  }
}

TEST(LoraModulesFlag, ReadsNamesAndPathsAndRefusesWhatItCannot) {
  LoadModelOptions load;
  ASSERT_TRUE(ParseLoraModulesFlag({"sql=/adapters/sql", "chat=/a=b"}, load).ok());
  ASSERT_EQ(load.lora_modules.size(), 2u);
  EXPECT_EQ(load.lora_modules[0].name, "sql");
  EXPECT_EQ(load.lora_modules[0].path, "/adapters/sql");
  EXPECT_EQ(load.lora_modules[1].path, "/a=b");  // the first '=' ends the name
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"sql"}, {"=/p"}, {"sql="}, {"a:arach=/p"}, {"sql=/p", "sql=/q"}}) {
    const absl::Status status = ParseLoraModulesFlag(bad, load);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad.front();
    EXPECT_NE(status.message().find("--lora_modules"), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace arach
