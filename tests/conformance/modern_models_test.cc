// What only the modern fixtures (../shared/fixtures/{qwen3,qwen2,llama3}-tiny) check beyond reference_test.cc:
// Llama 3 RoPE scaling on a 1024-token prompt against refs/refs_modern.*, their configs as the releases
// write them, and the tokenizer's own ids for the validation text.
#include <cmath>

#include "engine/core/mapped_file.h"
#include "engine/runner/offline_session.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::MaxAbsDiff;
using testing::RefPrompt;
using testing::RefTensor;

TEST(ModernModels, Llama3RopeScalingOnA1024TokenPrompt) {
  ARACH_REQUIRE_FIXTURES();
  testing::FixtureOptions options;
  options.num_blocks = 80;
  auto runner = testing::LoadFixtureRunner("llama3-tiny", options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  const std::vector<int32_t> ids = RefPrompt("llama3-tiny", "p1024");
  ASSERT_EQ(ids.size(), 1024u);
  OfflineSession session(**runner);
  auto logits = session.Logits(ids, 256);
  ASSERT_TRUE(logits.ok()) << logits.status();
  const size_t vocab = (*runner)->config().vocab_size;
  const std::vector<float> ref = RefTensor("llama3-tiny.base.p1024.last_logits");
  EXPECT_LT(MaxAbsDiff(logits->data() + 1023 * vocab, ref.data(), vocab), 1e-3f);
}

TEST(ModernModels, ConfigsParseAsTheReleasesWriteThem) {
  ARACH_REQUIRE_FIXTURES();
  auto qwen3 = LoadModelConfig(testing::FixturePath("qwen3-tiny"));
  ASSERT_TRUE(qwen3.ok()) << qwen3.status();
  EXPECT_EQ(qwen3->arch, Architecture::kQwen3);
  EXPECT_EQ(qwen3->head_dim, 32) << "the config's head_dim, not hidden_size / heads";
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_FALSE(qwen3->qkv_bias);
  EXPECT_EQ(qwen3->eos_token_ids, (std::vector<int>{151645, 151643})) << "config.json's, then generation_config.json's";
  auto qwen2 = LoadModelConfig(testing::FixturePath("qwen2-tiny"));
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_EQ(qwen2->arch, Architecture::kQwen2);
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->attn_out_bias);
  EXPECT_EQ(qwen2->UniformSlidingWindow(), 0) << "sliding_window 32768 with use_sliding_window false: full attention";
  EXPECT_TRUE(qwen2->layer_sliding_window.empty());
  auto llama3 = LoadModelConfig(testing::FixturePath("llama3-tiny"));
  ASSERT_TRUE(llama3.ok()) << llama3.status();
  EXPECT_EQ(llama3->rope.scaling, RopeScaling::kLlama3);
  EXPECT_FALSE(llama3->tie_word_embeddings);
}

// The validation ids of the references are the fixture tokenizer's ids of tiny-shakespeare.
TEST(ModernModels, ValidationIdsComeFromTheModelsOwnTokenizer) {
  ARACH_REQUIRE_FIXTURES();
  auto text = ReadFileToString(testing::FixturePath("data/tinyshakespeare.txt"));
  ASSERT_TRUE(text.ok());
  for (const std::string model : {"qwen3-tiny", "llama3-tiny"}) {
    auto tokenizer = LoadTokenizer(testing::FixturePath(model));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    auto ids = (*tokenizer)->Encode(*text, false);
    ASSERT_TRUE(ids.ok());
    const std::vector<int32_t> val(ids->begin() + static_cast<long>(0.9 * ids->size()), ids->end());
    const auto expected = testing::ModernRefsJson()["models"][model]["val_ids"].get<std::vector<int32_t>>();
    ASSERT_GE(val.size(), expected.size());
    EXPECT_EQ(std::vector<int32_t>(val.begin(), val.begin() + static_cast<long>(expected.size())), expected) << model;
  }
}

}  // namespace
}  // namespace arach
