// Qwen3, Qwen2 and Llama 3 (../shared/fixtures/{qwen3,qwen2,llama3}-tiny, real tokenizers, BF16/F16, one
// sharded) against refs/refs_modern.* (float32, an independent PyTorch forward): last-position and
// all-position logits for every variant within 1e-3, greedy continuations exactly, validation perplexity,
// Llama 3 RoPE scaling on a 1024-token prompt, and the tokenizer's own ids for the validation text.
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

Variant VariantOf(const std::string& ref_name) {
  Variant v;
  v.arach = ref_name == "arach" || ref_name == "arach_b0" || ref_name == "arach_skip";
  if (ref_name == "arach_b0") v.arach_offset = 0.0f;
  v.skip = ref_name == "skip" || ref_name == "arach_skip";
  return v;
}

struct Case {
  std::string model;
  std::string variant;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.variant; }
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.model + "_" + info.param.variant;
  for (char& c : name) if (c == '-') c = '_';
  return name;
}

class ModernConformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.adapter = true;
    options.num_blocks = 128;
    auto runner = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  const nlohmann::json& Ref() const {
    return testing::ModernRefsJson()["models"][GetParam().model]["variants"][GetParam().variant];
  }
  std::string RefName(const std::string& suffix) const { return GetParam().model + "." + GetParam().variant + "." + suffix; }
  std::unique_ptr<ModelRunner> runner_;
};

TEST_P(ModernConformance, LastLogitsOfP7AndP48) {
  OfflineSession session(*runner_);
  const size_t vocab = runner_->config().vocab_size;
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = RefPrompt(GetParam().model, prompt);
    auto logits = session.Logits(ids, 0, VariantOf(GetParam().variant));
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> ref = RefTensor(RefName(prompt + ".last_logits"));
    ASSERT_EQ(ref.size(), vocab);
    EXPECT_LT(MaxAbsDiff(logits->data() + (ids.size() - 1) * vocab, ref.data(), vocab), 1e-3f) << prompt;
  }
}

TEST_P(ModernConformance, GreedyP48ContinuationDecodedTokenByToken) {
  OfflineSession session(*runner_);
  GreedyOptions options;
  options.variant = VariantOf(GetParam().variant);
  options.max_new_tokens = 32;
  options.prefill_chunk = 16;
  auto out = session.GenerateGreedy({RefPrompt(GetParam().model, "p48")}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], Ref()["greedy_p48_32"].get<std::vector<int32_t>>())
      << "smallest reference top-1/top-2 margin " << Ref()["greedy_p48_32_min_top2_margin"];
}

TEST_P(ModernConformance, ValidationPerplexity) {
  const auto val = testing::ModernRefsJson()["models"][GetParam().model]["val_ids"].get<std::vector<int32_t>>();
  OfflineSession session(*runner_);
  double total = 0.0;
  int count = 0;
  for (int w = 0; w < 8; ++w) {
    auto logprobs = session.TokenLogProbs(std::vector<int32_t>(val.begin() + 128 * w, val.begin() + 128 * w + 129), 64,
                                          VariantOf(GetParam().variant));
    ASSERT_TRUE(logprobs.ok()) << logprobs.status();
    for (double lp : *logprobs) total -= lp;
    count += static_cast<int>(logprobs->size());
  }
  const double ppl = std::exp(total / count), ref_ppl = Ref()["val_ppl"].get<double>();
  EXPECT_EQ(count, Ref()["val_tokens"].get<int>());
  EXPECT_NEAR(ppl, ref_ppl, 1e-4 * ref_ppl) << "ppl " << ppl << " vs " << ref_ppl;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* model : {"qwen3-tiny", "qwen2-tiny", "llama3-tiny"}) {
    for (const char* variant : {"base", "arach", "arach_b0", "skip", "arach_skip"}) cases.push_back({model, variant});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Refs, ModernConformance, ::testing::ValuesIn(AllCases()), CaseName);

// The references hold all-position logits of p7 for base and ARACH (b = -0.5).
TEST(ModernModels, AllPositionLogitsOfP7BaseAndArach) {
  ARACH_REQUIRE_FIXTURES();
  for (const std::string model : {"qwen3-tiny", "qwen2-tiny", "llama3-tiny"}) {
    auto runner = testing::LoadFixtureRunner(model, 64);
    ASSERT_TRUE(runner.ok()) << runner.status();
    OfflineSession session(**runner);
    for (const std::string variant : {"base", "arach"}) {
      auto logits = session.Logits(RefPrompt(model, "p7"), 3, VariantOf(variant));  // in chunks of 3
      ASSERT_TRUE(logits.ok()) << logits.status();
      const std::vector<float> ref = RefTensor(model + "." + variant + ".p7.logits");
      ASSERT_EQ(logits->size(), ref.size());
      EXPECT_LT(MaxAbsDiff(logits->data(), ref.data(), ref.size()), 1e-3f) << model << " " << variant;
    }
  }
}

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
