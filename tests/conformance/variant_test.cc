// The variants beyond the references' logits (reference_test.cc): LAMBADA log-probs of base and ARACH,
// mixed-variant batches with chunked prefill, and ARACH's KV-cache promise.
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
      }, {testing::VariantOfRef(variant)});
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
  std::vector<Variant> variants;
  for (const char* name : {"base", "arach", "skip", "arach_skip"}) variants.push_back(testing::VariantOfRef(name));

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
