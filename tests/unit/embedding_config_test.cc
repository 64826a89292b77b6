// A model folder's embedding config (engine/model/embedding_config.h: Sentence-Transformers' modules.json, its
// Pooling module's config.json and its Transformer module's sentence_bert_config.json) and the pooler that applies
// the pooling chunk by chunk (engine/embedding_pooler.h).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/embedding_pooler.h"
#include "engine/model/embedding_config.h"
#include "gtest/gtest.h"
#include "tests/testing/sentence_transformers_folder.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

constexpr int kHidden = 4;

constexpr const char* kModules = testing::kSentenceTransformersModules;

// Sentence-Transformers' Pooling config with `mode` (a pooling_mode_* field) on and the others off.
std::string PoolingConfig(const std::string& mode, const std::string& extra = "") {
  std::string text = R"({"word_embedding_dimension": 4)";
  for (const char* field : {"pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                            "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"}) {
    text += std::string(", \"") + field + "\": " + (mode == field ? "true" : "false");
  }
  return text + R"(, "include_prompt": true)" + extra + "}";
}

class PoolingFolder : public ::testing::Test {
 protected:
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(dir_.path()) / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  absl::StatusOr<EmbeddingConfig> Load() { return LoadEmbeddingConfig(dir_.path(), kHidden); }
  // The load's error message, which must name `file` (relative to the folder) and `what`.
  void ExpectRefusal(const std::string& file, const std::string& what) {
    const absl::StatusOr<EmbeddingConfig> pooling = Load();
    ASSERT_FALSE(pooling.ok()) << "loaded as " << PoolingModeName(pooling->pooling);
    EXPECT_EQ(pooling.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(pooling.status().message().find((std::filesystem::path(dir_.path()) / file).string()), std::string::npos)
        << pooling.status();
    EXPECT_NE(pooling.status().message().find(what), std::string::npos) << pooling.status();
  }
  testing::ScopedTempDir dir_;
};

TEST_F(PoolingFolder, WithoutModulesJsonTheLastTokenIsPooled) {
  Write("sentence_bert_config.json", R"({"max_seq_length": 8, "do_lower_case": true})");  // (read only through modules.json)
  const absl::StatusOr<EmbeddingConfig> pooling = Load();
  ASSERT_TRUE(pooling.ok()) << pooling.status();
  EXPECT_EQ(pooling->pooling, PoolingMode::kLastToken);
  EXPECT_EQ(pooling->max_tokens, std::nullopt);
  EXPECT_FALSE(pooling->lowercase);
}

// The Transformer module's sentence_bert_config.json, in the module's folder: the input's length and case.
TEST_F(PoolingFolder, TheTransformerModulesConfigBoundsAndLowerCasesTheInput) {
  Write("modules.json", kModules);
  Write("1_Pooling/config.json", PoolingConfig("pooling_mode_lasttoken"));
  absl::StatusOr<EmbeddingConfig> config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_tokens, std::nullopt) << "no sentence_bert_config.json: the model's context";
  EXPECT_FALSE(config->lowercase);
  EXPECT_EQ(config->input_source, "");
  Write("sentence_bert_config.json", R"({"max_seq_length": 8192, "do_lower_case": false})");
  config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_tokens, 8192);
  EXPECT_FALSE(config->lowercase);
  EXPECT_EQ(config->input_source, (std::filesystem::path(dir_.path()) / "sentence_bert_config.json").string());
  Write("sentence_bert_config.json", R"({"max_seq_length": null, "do_lower_case": true})");
  config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_tokens, std::nullopt);
  EXPECT_TRUE(config->lowercase);
  // A Transformer module in a folder of its own reads the config there.
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer", "path": "0_Transformer"},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])");
  Write("0_Transformer/sentence_bert_config.json", R"({"max_seq_length": 512})");
  config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_tokens, 512);
  EXPECT_FALSE(config->lowercase);

  Write("modules.json", kModules);
  for (const char* bad : {R"({"max_seq_length": 0})", R"({"max_seq_length": -4})", R"({"max_seq_length": 8.5})",
                          R"({"max_seq_length": "512"})", R"({"max_seq_length": 4294967296})"}) {
    Write("sentence_bert_config.json", bad);
    ExpectRefusal("sentence_bert_config.json", "\"max_seq_length\"");
  }
  Write("sentence_bert_config.json", R"({"do_lower_case": "yes"})");
  ExpectRefusal("sentence_bert_config.json", "\"do_lower_case\"");
  Write("sentence_bert_config.json", "[512]");
  ExpectRefusal("sentence_bert_config.json", "not a JSON object");
  Write("sentence_bert_config.json", "{");
  ExpectRefusal("sentence_bert_config.json", "not valid JSON");
  Write("sentence_bert_config.json", "{}");
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer"},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])");
  ExpectRefusal("modules.json", "module 0 (Transformer) has no \"path\"");
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
                            {"type": "sentence_transformers.models.Transformer", "path": ""},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])");
  ExpectRefusal("modules.json", "a second Transformer");
}

// config_sentence_transformers.json's default_prompt_name names the prompt every text input gets first.
TEST_F(PoolingFolder, TheDefaultPromptIsTheOneItsNameNames) {
  Write("modules.json", kModules);
  Write("1_Pooling/config.json", PoolingConfig("pooling_mode_lasttoken"));
  Write("config_sentence_transformers.json", R"({"prompts": {"query": "Instruct: find\nQuery:", "document": ""}, "default_prompt_name": null})");
  absl::StatusOr<EmbeddingConfig> config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->default_prompt, "");
  Write("config_sentence_transformers.json", R"({"prompts": {"query": "Instruct: find\nQuery:", "document": ""}, "default_prompt_name": "query"})");
  config = Load();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->default_prompt, "Instruct: find\nQuery:");
  Write("config_sentence_transformers.json", R"({"prompts": {"document": ""}, "default_prompt_name": "query"})");
  ExpectRefusal("config_sentence_transformers.json", "\"default_prompt_name\" \"query\" names no string");
  Write("config_sentence_transformers.json", R"({"default_prompt_name": "query"})");
  ExpectRefusal("config_sentence_transformers.json", "names no string in \"prompts\"");
  Write("config_sentence_transformers.json", R"({"prompts": {"query": 4}, "default_prompt_name": "query"})");
  ExpectRefusal("config_sentence_transformers.json", "names no string");
  Write("config_sentence_transformers.json", R"({"prompts": {}, "default_prompt_name": 3})");
  ExpectRefusal("config_sentence_transformers.json", "\"default_prompt_name\" must be a string or null");
  Write("config_sentence_transformers.json", "[]");
  ExpectRefusal("config_sentence_transformers.json", "not a JSON object");
}

TEST_F(PoolingFolder, EachSupportedModeIsRead) {
  Write("modules.json", kModules);
  for (const auto& [field, mode] : {std::pair{"pooling_mode_lasttoken", PoolingMode::kLastToken},
                                    {"pooling_mode_mean_tokens", PoolingMode::kMean},
                                    {"pooling_mode_cls_token", PoolingMode::kFirstToken}}) {
    Write("1_Pooling/config.json", PoolingConfig(field));
    const absl::StatusOr<EmbeddingConfig> pooling = Load();
    ASSERT_TRUE(pooling.ok()) << field << ": " << pooling.status();
    EXPECT_EQ(pooling->pooling, mode) << field;
    EXPECT_EQ(pooling->pooling_source, (std::filesystem::path(dir_.path()) / "1_Pooling" / "config.json").string());
  }
}

TEST_F(PoolingFolder, WhatWouldChangeTheVectorIsRefusedNamingIt) {
  Write("modules.json", kModules);
  for (const char* unsupported : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
    Write("1_Pooling/config.json", PoolingConfig(unsupported));
    ExpectRefusal("1_Pooling/config.json", unsupported);
  }
  Write("1_Pooling/config.json", PoolingConfig("pooling_mode_mean_tokens", R"(, "pooling_mode_lasttoken": true)"));
  ExpectRefusal("1_Pooling/config.json", "2 pooling modes");
  Write("1_Pooling/config.json", PoolingConfig("none"));
  ExpectRefusal("1_Pooling/config.json", "0 pooling modes");
  Write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "include_prompt": false})");
  ExpectRefusal("1_Pooling/config.json", "include_prompt");
  Write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "word_embedding_dimension": 8})");
  ExpectRefusal("1_Pooling/config.json", "word_embedding_dimension");
  Write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": "yes"})");
  ExpectRefusal("1_Pooling/config.json", "pooling_mode_mean_tokens");
  Write("1_Pooling/config.json", "{not json");
  ExpectRefusal("1_Pooling/config.json", "not valid JSON");
  std::filesystem::remove(std::filesystem::path(dir_.path()) / "1_Pooling" / "config.json");
  const absl::StatusOr<EmbeddingConfig> missing = Load();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("1_Pooling/config.json"), std::string::npos) << missing.status();

  Write("1_Pooling/config.json", PoolingConfig("pooling_mode_mean_tokens"));
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
                            {"type": "sentence_transformers.models.Dense", "path": "2_Dense"}])");
  ExpectRefusal("modules.json", "sentence_transformers.models.Dense");
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
                            {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])");
  ExpectRefusal("modules.json", "a second Pooling");
  Write("modules.json", R"([{"type": "sentence_transformers.models.Transformer", "path": ""}])");
  ExpectRefusal("modules.json", "no Pooling module");
  Write("modules.json", R"([{"path": "1_Pooling"}])");
  ExpectRefusal("modules.json", "module 0 has no \"type\"");
  Write("modules.json", R"({"type": "sentence_transformers.models.Pooling"})");
  ExpectRefusal("modules.json", "not a JSON list");
}

// Rows of hidden size 4 in chunks, as the steps return them (a mean's chunk summed on the device).
TEST(EmbeddingPooler, PoolsChunksAsTheWholePromptAndStartsOverAtPositionZero) {
  const std::vector<float> first = {1, 2, 3, 4, 5, 6, 7, 8};       // positions 0, 1
  const std::vector<float> first_sum = {6, 8, 10, 12};              // their sum
  const std::vector<float> second = {9, 10, 11, 12};                // position 2
  EmbeddingPooler mean(PoolingMode::kMean, kHidden);
  EXPECT_EQ(mean.RowsOf(0, false), HiddenRows::kSum);
  EXPECT_EQ(mean.RowsOf(2, true), HiddenRows::kSum);
  const std::vector<float> abandoned = {1, 1, 1, 1};
  mean.Add(0, abandoned);  // a first computation, preempted after its first chunk
  mean.Add(0, first_sum);
  mean.Add(2, second);
  EXPECT_EQ(mean.Result(3), (std::vector<float>{5, 6, 7, 8}));

  EmbeddingPooler first_token(PoolingMode::kFirstToken, kHidden);
  EXPECT_EQ(first_token.RowsOf(0, false), HiddenRows::kFirst);
  EXPECT_EQ(first_token.RowsOf(2, true), HiddenRows::kNone);
  first_token.Add(0, std::span<const float>(first).first(kHidden));
  EXPECT_EQ(first_token.Result(3), (std::vector<float>{1, 2, 3, 4}));

  EmbeddingPooler last(PoolingMode::kLastToken, kHidden);
  EXPECT_EQ(last.RowsOf(0, false), HiddenRows::kNone);
  EXPECT_EQ(last.RowsOf(2, true), HiddenRows::kLast);
  last.Add(2, second);
  EXPECT_EQ(last.Result(3), second);
  EXPECT_FALSE(last.ReadsEarlierRows());
  EXPECT_TRUE(mean.ReadsEarlierRows());
  EXPECT_TRUE(first_token.ReadsEarlierRows());
}

}  // namespace
}  // namespace arach
