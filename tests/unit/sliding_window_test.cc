// Mistral's sliding window through the whole forward: a random-weight Mistral (make-model mistral/tiny,
// window 16) decoded token by token while the blocks before the window are given back and poisoned (NaN)
// gives the logits of computing the sequence at once; and the window changes the result (the same
// weights without it differ), so the test would notice a window that is ignored.
#include <cmath>
#include <cstring>
#include <fstream>

#include "engine/core/status.h"
#include "engine/model/checkpoint.h"
#include "engine/bundle/model_bundle.h"
#include "engine/engine.h"
#include "engine/runner/offline_session.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"
#include "tools/make_model/make_model.h"

namespace arach {
namespace {

constexpr int kBlockSize = 4;

absl::StatusOr<std::unique_ptr<ModelRunner>> Runner(const std::string& dir) {
  LoadModelOptions options;
  options.block_size = kBlockSize;
  options.kv_blocks = 64;
  ARACH_ASSIGN_OR_RETURN(ModelBundle model, LoadModelBundle(dir, options));
  return std::move(model.runner);
}

class SlidingWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions options;
    options.arch = "mistral";
    options.preset = "tiny";
    options.out_dir = dir_.path();
    options.seed = 3;
    auto config = MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
    ASSERT_EQ(config->UniformSlidingWindow(), 16);
    for (int i = 0; i < 60; ++i) ids_.push_back(static_cast<int32_t>((i * 37 + 11) % 1000));
  }
  testing::ScopedTempDir dir_;
  std::vector<int32_t> ids_;
};

TEST_F(SlidingWindow, DecodingWithReleasedPoisonedBlocksMatchesTheWholeSequence) {
  auto runner = Runner(dir_.path());
  ASSERT_TRUE(runner.ok()) << runner.status();
  const ModelConfig& c = (*runner)->config();
  const int window = c.UniformSlidingWindow();
  for (bool arach : {false, true}) {
    Variant variant;
    variant.arach = arach;
    OfflineSession session(**runner);
    auto whole = session.Logits(ids_, 0, variant);
    ASSERT_TRUE(whole.ok()) << whole.status();

    BlockAllocator allocator((*runner)->kv_cache().num_blocks());
    BlockTable table(kBlockSize);
    int poisoned = 0;
    float worst = 0.0f;
    ForwardOutput out;  // reused by every step, as the engine does
    for (int p = 0; p < static_cast<int>(ids_.size()); ++p) {
      ASSERT_TRUE(table.Reserve(p + 1, allocator).ok());
      ForwardBatch batch;
      SequenceInput input;
      input.tokens = std::span<const int32_t>(ids_).subspan(p, 1);
      input.start_position = p;
      input.block_table = &table;
      input.variant = variant;
      batch.sequences.push_back(input);
      const absl::Status executed = (*runner)->Execute(batch, out);
      ASSERT_TRUE(executed.ok()) << executed;
      const float* expected = whole->data() + static_cast<size_t>(p) * c.vocab_size;
      worst = std::max(worst, testing::MaxAbsDiff(out.Row(0, 0).data(), expected, c.vocab_size));
      // Give back what the next query cannot see, and poison it in every layer.
      const int before = table.num_held();
      table.ReleaseBefore(p + 1 - window + 1, allocator);
      const int released = before - table.num_held();
      for (int b = poisoned; b < poisoned + released; ++b) {
        const size_t bytes = static_cast<size_t>(kBlockSize) * c.kv_size() * sizeof(float);
        for (int l = 0; l < c.num_layers; ++l) {
          const PagedKvLayer layer = (*runner)->kv_cache().layer(l);
          std::memset(static_cast<char*>(layer.k) + table.blocks()[b] * bytes, 0xff, bytes);
          std::memset(static_cast<char*>(layer.v) + table.blocks()[b] * bytes, 0xff, bytes);
        }
      }
      poisoned += released;
      EXPECT_LE(table.num_held(), window / kBlockSize + 1) << "position " << p;
    }
    EXPECT_GT(poisoned, 8);
    EXPECT_LT(worst, 1e-4f) << (arach ? "ARACH" : "base");
    table.ReleaseAll(allocator);
    EXPECT_EQ(allocator.num_free(), allocator.num_blocks());
  }
}

TEST_F(SlidingWindow, TheWindowChangesLogitsBeyondIt) {
  auto windowed = Runner(dir_.path());
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  // The same weights without a window.
  std::ifstream in(dir_.File("config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  config["sliding_window"] = nullptr;
  std::ofstream(dir_.File("config.json")) << config.dump();
  auto full = Runner(dir_.path());
  ASSERT_TRUE(full.ok()) << full.status();
  OfflineSession a(**windowed), b(**full);
  auto la = a.Logits(ids_);
  auto lb = b.Logits(ids_);
  ASSERT_TRUE(la.ok() && lb.ok());
  const size_t vocab = (*full)->config().vocab_size;
  EXPECT_LT(testing::MaxAbsDiff(la->data(), lb->data(), 16 * vocab), 1e-6f) << "inside the window nothing differs";
  EXPECT_GT(testing::MaxAbsDiff(la->data() + 40 * vocab, lb->data() + 40 * vocab, vocab), 1e-4f) << "beyond it the window shows";
}

// Speculative decoding under the window: a rejected draft's position is the next query, whose window starts before the
// drafts' would; its blocks must still be held. Three sequences at once on a small pool, so that a block given back
// too early is soon another sequence's: each output with an edited prediction equals its output alone.
TEST_F(SlidingWindow, RejectedDraftsQueriesStillSeeTheirWindow) {
  LoadModelOptions options;
  options.block_size = kBlockSize;
  options.kv_blocks = 30;
  absl::StatusOr<ModelBundle> model = LoadModelBundle(dir_.path(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EngineConfig config;
  config.enable_prefix_caching = false;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*model), config);
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::vector<EngineRequest> requests(3);
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 3; ++i) {
    requests[i].prompt.assign(ids_.begin() + 10 * i, ids_.begin() + 10 * i + 12);
    requests[i].sampling.temperature = 0.0f;
    requests[i].sampling.max_tokens = 48;
    requests[i].sampling.ignore_eos = true;
    auto observer = std::make_shared<testing::CollectingObserver>();
    ASSERT_TRUE((*engine)->Submit(requests[i], observer).ok());
    ASSERT_TRUE(observer->Wait());
    alone.push_back(observer->tokens());
    // The output with every fifth token changed: a draft rejected every few tokens.
    requests[i].prediction = alone.back();
    for (size_t t = 3; t < requests[i].prediction.size(); t += 5) requests[i].prediction[t] = (requests[i].prediction[t] + 1) % 1000;
  }
  std::vector<std::shared_ptr<testing::CollectingObserver>> observers;
  for (const EngineRequest& request : requests) {
    observers.push_back(std::make_shared<testing::CollectingObserver>());
    ASSERT_TRUE((*engine)->Submit(request, observers.back()).ok());
  }
  int rejected = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(observers[i]->Wait());
    EXPECT_EQ(observers[i]->tokens(), alone[i]) << "request " << i;
    rejected += observers[i]->finish().usage.draft_tokens - observers[i]->finish().usage.accepted_draft_tokens;
  }
  EXPECT_GT(rejected, 10);
}

}  // namespace
}  // namespace arach
