// ARACH and pre-projection + skip conformance against ../shared/fixtures/refs (float32 CPU), mixed-variant
// batches, chunked prefill with ARACH, and ARACH's KV-cache promise.
#include <cmath>
#include <cstring>

#include "engine/runner/offline_session.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/core/mapped_file.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::MaxAbsDiff;
using testing::RefPrompt;
using testing::RefTensor;

Variant VariantOf(const std::string& ref_name) {
  Variant v;
  if (ref_name == "arach" || ref_name == "arach_b0" || ref_name == "arach_skip") v.arach = true;
  if (ref_name == "arach_b0") v.arach_offset = 0.0f;
  if (ref_name == "skip" || ref_name == "arach_skip") v.skip = true;
  return v;
}

struct Case {
  std::string model;
  std::string variant;  // name in refs.json / refs.safetensors
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.variant; }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.model + "_" + info.param.variant;
  for (char& c : name) if (c == '-') c = '_';
  return name;
}

class VariantConformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    testing::FixtureOptions options;
    options.adapter = GetParam().model != "llama-stories260k";
    auto runner = testing::LoadFixtureRunner(GetParam().model, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  const nlohmann::json& Ref() const { return testing::RefsJson()["models"][GetParam().model]["variants"][GetParam().variant]; }
  std::unique_ptr<ModelRunner> runner_;
};

TEST_P(VariantConformance, LastLogitsOfP7AndP48) {
  OfflineSession session(*runner_);
  const size_t vocab = runner_->config().vocab_size;
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = RefPrompt(GetParam().model, prompt);
    auto logits = session.Logits(ids, 0, VariantOf(GetParam().variant));
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> ref = RefTensor(GetParam().model + "." + GetParam().variant + "." + prompt + ".last_logits");
    ASSERT_EQ(ref.size(), vocab);
    EXPECT_LT(MaxAbsDiff(logits->data() + (ids.size() - 1) * vocab, ref.data(), vocab), 1e-3f) << prompt;
  }
}

TEST_P(VariantConformance, GreedyP48Continuation) {
  OfflineSession session(*runner_);
  GreedyOptions options;
  options.variant = VariantOf(GetParam().variant);
  options.max_new_tokens = 32;
  auto out = session.GenerateGreedy({RefPrompt(GetParam().model, "p48")}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], Ref()["greedy_p48_32"].get<std::vector<int32_t>>());
}

TEST_P(VariantConformance, ValidationPerplexity) {
  std::vector<int32_t> val;
  if (GetParam().model == "llama-stories260k") {
    const auto story = testing::RefsJson()["notes"]["llama_greedy_from_bos_60"].get<std::vector<int32_t>>();
    for (int r = 0; r < 6; ++r) val.insert(val.end(), story.begin(), story.end());
  } else {
    auto tokenizer = LoadTokenizer(testing::FixturePath(GetParam().model));
    ASSERT_TRUE(tokenizer.ok());
    auto text = ReadFileToString(testing::FixturePath("data/tinyshakespeare.txt"));
    ASSERT_TRUE(text.ok());
    auto ids = (*tokenizer)->Encode(*text, false);
    ASSERT_TRUE(ids.ok());
    val.assign(ids->begin() + static_cast<long>(0.9 * ids->size()), ids->end());
  }
  OfflineSession session(*runner_);
  double total = 0.0;
  int count = 0;
  for (int w = 0; w < std::min<int>(8, (static_cast<int>(val.size()) - 1) / 128); ++w) {
    auto logprobs = session.TokenLogProbs(std::vector<int32_t>(val.begin() + 128 * w, val.begin() + 128 * w + 129), 512,
                                          VariantOf(GetParam().variant));
    ASSERT_TRUE(logprobs.ok()) << logprobs.status();
    for (double lp : *logprobs) total -= lp;
    count += static_cast<int>(logprobs->size());
  }
  const double ppl = std::exp(total / count), ref_ppl = Ref()["val_ppl"].get<double>();
  EXPECT_EQ(count, Ref()["val_tokens"].get<int>());
  EXPECT_NEAR(ppl, ref_ppl, 1e-3 * ref_ppl) << "ppl " << ppl << " vs " << ref_ppl;
}

INSTANTIATE_TEST_SUITE_P(
    Refs, VariantConformance,
    ::testing::Values(Case{"gpt2-tiny", "arach"}, Case{"gpt2-tiny", "arach_b0"}, Case{"gpt2-tiny", "skip"},
                      Case{"gpt2-tiny", "arach_skip"}, Case{"neox-tiny", "arach"}, Case{"neox-tiny", "arach_b0"},
                      Case{"neox-tiny", "skip"}, Case{"neox-tiny", "arach_skip"}, Case{"llama-stories260k", "arach"},
                      Case{"llama-stories260k", "arach_b0"}),
    CaseName);

// The references hold all-position logits of p7 for ARACH (b = -0.5).
TEST(ArachAllPositions, P7LogitsOfEveryModel) {
  ARACH_REQUIRE_FIXTURES();
  for (const std::string model : {"gpt2-tiny", "neox-tiny", "llama-stories260k"}) {
    auto runner = testing::LoadFixtureRunner(model);
    ASSERT_TRUE(runner.ok()) << runner.status();
    OfflineSession session(**runner);
    auto logits = session.Logits(RefPrompt(model, "p7"), 0, VariantOf("arach"));
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> ref = RefTensor(model + ".arach.p7.logits");
    ASSERT_EQ(logits->size(), ref.size());
    EXPECT_LT(MaxAbsDiff(logits->data(), ref.data(), ref.size()), 1e-3f) << model;
  }
}

// lm-eval-harness lambada_openai protocol on the first 40 lines: summed target log-prob and greedy flag.
TEST(Lambada, Gpt2TinyFirst40BaseAndArach) {
  ARACH_REQUIRE_FIXTURES();
  auto runner = testing::LoadFixtureRunner("gpt2-tiny");
  ASSERT_TRUE(runner.ok()) << runner.status();
  OfflineSession session(**runner);
  const auto& rows = testing::RefsJson()["lambada_gpt2_tiny_first40"];
  ASSERT_EQ(rows.size(), 40u);
  for (const std::string variant : {"base", "arach"}) {
    int greedy_mismatches = 0;
    float worst = 0.0f;
    for (const auto& row : rows) {
      const auto context = row["context_ids"].get<std::vector<int32_t>>();
      const auto target = row["target_ids"].get<std::vector<int32_t>>();
      std::vector<int32_t> ids = context;
      ids.insert(ids.end(), target.begin(), target.end() - 1);  // the last target token predicts nothing
      double sum = 0.0;
      bool greedy = true;
      const absl::Status status = session.ForEachPosition({ids}, 0, [&](int, int position, std::span<const float> row) {
        const int t = position - static_cast<int>(context.size()) + 1;  // index into the target
        if (t < 0) return;
        sum += LogSoftmaxAt(row, target[t]);
        greedy &= ArgMax(row) == target[t];
      }, {VariantOf(variant)});
      ASSERT_TRUE(status.ok()) << status;
      worst = std::max(worst, static_cast<float>(std::fabs(sum - row[variant]["logprob"].get<double>())));
      greedy_mismatches += greedy != row[variant]["greedy"].get<bool>();
    }
    EXPECT_LT(worst, 1e-3f) << variant;
    EXPECT_EQ(greedy_mismatches, 0) << variant;
  }
}

// One batch holding the four variants (different prompt lengths) gives what each request gives alone;
// chunked prefill and token-by-token decode give the same as one-shot prefill, ARACH included.
class MixedBatch : public ::testing::TestWithParam<std::string> {};

TEST_P(MixedBatch, FourVariantsTogetherEqualAlone) {
  ARACH_REQUIRE_FIXTURES();
  testing::FixtureOptions options;
  options.adapter = true;
  options.block_size = 4;
  options.num_blocks = 512;
  auto runner = testing::LoadFixtureRunner(GetParam(), options);
  ASSERT_TRUE(runner.ok()) << runner.status();
  OfflineSession session(**runner);
  const int vocab = (*runner)->config().vocab_size;
  const std::vector<int32_t> p48 = RefPrompt(GetParam(), "p48");
  const std::vector<std::vector<int32_t>> prompts = {RefPrompt(GetParam(), "p7"), p48,
                                                     std::vector<int32_t>(p48.begin() + 3, p48.begin() + 20), {p48[9], p48[2]}};
  const std::vector<Variant> variants = {VariantOf("base"), VariantOf("arach"), VariantOf("skip"), VariantOf("arach_skip")};

  auto collect = [&](const std::vector<std::vector<int32_t>>& ps, const std::vector<Variant>& vs, int chunk) {
    std::vector<std::vector<float>> out(ps.size());
    for (size_t s = 0; s < ps.size(); ++s) out[s].resize(ps[s].size() * vocab);
    const absl::Status status = session.ForEachPosition(ps, chunk, [&](int s, int position, std::span<const float> row) {
      std::copy(row.begin(), row.end(), out[s].begin() + static_cast<size_t>(position) * vocab);
    }, vs);
    EXPECT_TRUE(status.ok()) << status;
    return out;
  };
  std::vector<std::vector<float>> alone;
  for (size_t s = 0; s < prompts.size(); ++s) alone.push_back(collect({prompts[s]}, {variants[s]}, 0)[0]);
  for (int chunk : {0, 1, 5}) {
    const auto together = collect(prompts, variants, chunk);
    for (size_t s = 0; s < prompts.size(); ++s) {
      EXPECT_LT(MaxAbsDiff(together[s].data(), alone[s].data(), alone[s].size()), 1e-4f)
          << variants[s].Name() << " chunk " << chunk;
    }
  }
  // Greedy tokens: each variant alone vs all four in one batch, prefilled in chunks of 7.
  GreedyOptions greedy;
  greedy.max_new_tokens = 16;
  greedy.prefill_chunk = 7;
  greedy.per_sequence = variants;
  auto batched = session.GenerateGreedy(prompts, greedy);
  ASSERT_TRUE(batched.ok()) << batched.status();
  for (size_t s = 0; s < prompts.size(); ++s) {
    GreedyOptions single;
    single.max_new_tokens = 16;
    single.variant = variants[s];
    auto one = session.GenerateGreedy({prompts[s]}, single);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*batched)[s], (*one)[0]) << variants[s].Name();
  }
  EXPECT_EQ(session.allocator().num_free(), session.allocator().num_blocks());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MixedBatch, ::testing::Values("gpt2-tiny", "neox-tiny"), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name) if (c == '-') c = '_';
  return name;
});

// ARACH costs no KV memory: the same blocks at every step, and only the verbal rows' slots are written.
TEST(ArachKvPromise, SameBlocksAtEveryStepAndNoHubInTheCache) {
  ARACH_REQUIRE_FIXTURES();
  auto runner = testing::LoadFixtureRunner("neox-tiny", /*num_blocks=*/64, /*block_size=*/4);
  ASSERT_TRUE(runner.ok()) << runner.status();
  const std::vector<int32_t> prompt = RefPrompt("neox-tiny", "p7");
  const int new_tokens = 20;

  std::vector<std::vector<int>> held[2];
  for (int arach = 0; arach < 2; ++arach) {
    // Poison the whole pool, so that any write shows.
    const KvCache& cache = (*runner)->kv_cache();
    const size_t layer_bytes = static_cast<size_t>(cache.num_blocks()) * cache.block_size() *
                               (*runner)->config().kv_size() * sizeof(float);
    for (int l = 0; l < (*runner)->config().num_layers; ++l) {
      std::memset(cache.layer(l).k, 0xff, layer_bytes);
      std::memset(cache.layer(l).v, 0xff, layer_bytes);
    }
    OfflineSession session(**runner);
    GreedyOptions options;
    options.variant.arach = arach == 1;
    options.max_new_tokens = new_tokens;
    options.prefill_chunk = 3;
    options.on_step = [&](int, const std::vector<int>& blocks) { held[arach].push_back(blocks); };
    auto out = session.GenerateGreedy({prompt}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    // Every cached token (prompt + all generated but the last) wrote exactly one slot per layer and no more.
    const int cached_tokens = static_cast<int>(prompt.size()) + new_tokens - 1;
    for (int l = 0; l < (*runner)->config().num_layers; ++l) {
      const auto* k = static_cast<const uint32_t*>(cache.layer(l).k);
      const size_t slot_words = (*runner)->config().kv_size();
      int written = 0;
      for (int slot = 0; slot < cache.num_blocks() * cache.block_size(); ++slot) {
        written += k[slot * slot_words] != 0xffffffffu;
      }
      EXPECT_EQ(written, cached_tokens) << "layer " << l << (arach ? " with ARACH" : " base");
    }
  }
  ASSERT_FALSE(held[0].empty());
  EXPECT_EQ(held[0], held[1]) << "blocks held per step differ between base and ARACH";
}

}  // namespace
}  // namespace arach
