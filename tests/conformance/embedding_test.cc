// The engine's embedding requests (RequestKind::kEmbed) return, by default (last-token pooling), the prompt's last
// hidden state after the final norm, the row the LM head reads. Checked through each model's own output projection against the references'
// last-position logits (../shared/fixtures/refs: an independent PyTorch forward), for every fixture model and
// every variant the references hold: a hidden state that projects onto the reference logits is the references'.
#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/output_projection.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

constexpr float kLogitTolerance = 1e-3f;  // as the reference suite's

std::shared_ptr<testing::CollectingObserver> Embed(Engine& engine, const std::vector<int32_t>& prompt, const Variant& variant) {
  EngineRequest request;
  request.kind = RequestKind::kEmbed;
  request.prompt = prompt;
  request.variant = variant;
  auto observer = std::make_shared<testing::CollectingObserver>();
  const absl::StatusOr<uint64_t> submitted = engine.Submit(request, observer);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok() || !observer->Wait()) return nullptr;
  return observer;
}

class Embeddings : public ::testing::TestWithParam<testing::RefCase> {};

// p48 is prefilled in chunks of 16 (a step budget of 16 tokens), beside a generation, and then again from the
// prefix cache: the same hidden state every way.
TEST_P(Embeddings, TheLastHiddenStateProjectsOntoTheReferenceLogits) {
  ARACH_REQUIRE_FIXTURES();
  const std::string& model = GetParam().model;
  EngineConfig config;
  config.max_num_batched_tokens = 16;
  auto engine = testing::MakeFixtureEngine(model, config);
  ASSERT_NE(engine, nullptr);
  auto projection = testing::OutputProjection::Load(model);
  ASSERT_TRUE(projection.ok()) << projection.status();
  const Variant variant = testing::VariantOfRef(GetParam().variant);
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = testing::RefPrompt(model, prompt);
    // A generation in the same steps: its rows sit beside the embedded one's.
    EngineRequest generation;
    generation.prompt = ids;
    generation.sampling.max_tokens = 4;
    auto generated = std::make_shared<testing::CollectingObserver>();
    ASSERT_TRUE(engine->Submit(generation, generated).ok());
    auto first = Embed(*engine, ids, variant);
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(generated->Wait());
    const FinishInfo& finish = first->finish();
    ASSERT_TRUE(finish.status.ok()) << finish.status;
    EXPECT_EQ(first->tokens().size(), 0u) << "an embedding generates nothing";
    EXPECT_EQ(finish.usage.prompt_tokens, static_cast<int>(ids.size()));
    EXPECT_EQ(finish.usage.completion_tokens, 0);
    ASSERT_EQ(finish.embedding.size(), static_cast<size_t>(engine->model_config().hidden_size)) << prompt;
    const absl::StatusOr<float> error =
        projection->MaxLogitError(finish.embedding, model + "." + GetParam().variant + "." + prompt + ".last_logits");
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, kLogitTolerance) << prompt;

    auto again = Embed(*engine, ids, variant);
    ASSERT_NE(again, nullptr);
    if (ids.size() > 16) {
      EXPECT_GT(again->finish().usage.cached_prompt_tokens, 0) << "the second one reuses the first's blocks";
    }
    for (size_t k = 0; k < finish.embedding.size(); ++k) {
      ASSERT_NEAR(again->finish().embedding[k], finish.embedding[k], 1e-5) << prompt << " element " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Refs, Embeddings, ::testing::ValuesIn(testing::ReferenceCases(/*modern=*/true)), testing::RefCaseName);

// A causal model's hidden state at position t is the last-token embedding of the prompt's first t + 1 tokens: the
// mean pooling of a prompt is the mean of its prefixes' last-token embeddings, the first-token pooling the
// one-token prefix's. Both computed here by the last-token path of the plain fixture; the pooled folder's prompt is
// prefilled in chunks of 16, under both variants, and again (never from the prefix cache: every row is read).
class PooledEmbeddings : public ::testing::TestWithParam<std::string> {};

TEST_P(PooledEmbeddings, MeanAndFirstTokenPoolingEqualTheirPrefixesLastTokenEmbeddings) {
  ARACH_REQUIRE_FIXTURES();
  const std::string& model = GetParam();
  auto last_token = testing::MakeFixtureEngine(model);
  ASSERT_NE(last_token, nullptr);
  ASSERT_EQ(last_token->embedding_config().pooling, PoolingMode::kLastToken);
  const int hidden = last_token->model_config().hidden_size;
  const std::vector<int32_t> ids = testing::RefPrompt(model, "p48");
  for (const auto& [field, mode] : {std::pair{"pooling_mode_mean_tokens", PoolingMode::kMean},
                                    {"pooling_mode_cls_token", PoolingMode::kFirstToken}}) {
    testing::ScopedTempDir dir;
    testing::MakePooledFixtureFolder(model, field, dir.path());
    EngineConfig config;
    config.max_num_batched_tokens = 16;
    auto pooled = testing::MakeFixtureEngine(model, config, 256, dir.path());
    ASSERT_NE(pooled, nullptr);
    ASSERT_EQ(pooled->embedding_config().pooling, mode);
    for (const Variant& variant : {Variant{}, Variant{.arach = true}}) {
      const std::string label = absl::StrCat(model, " ", field, " ", variant.Describe());
      std::vector<double> expected(static_cast<size_t>(hidden), 0.0);
      const size_t prefixes = mode == PoolingMode::kMean ? ids.size() : 1;
      for (size_t n = 1; n <= prefixes; ++n) {
        auto prefix = Embed(*last_token, std::vector<int32_t>(ids.begin(), ids.begin() + n), variant);
        ASSERT_NE(prefix, nullptr);
        ASSERT_EQ(prefix->finish().embedding.size(), static_cast<size_t>(hidden));
        for (int k = 0; k < hidden; ++k) expected[k] += prefix->finish().embedding[k] / static_cast<double>(prefixes);
      }
      for (int round = 0; round < 2; ++round) {
        auto embedded = Embed(*pooled, ids, variant);
        ASSERT_NE(embedded, nullptr);
        const FinishInfo& finish = embedded->finish();
        ASSERT_TRUE(finish.status.ok()) << finish.status;
        EXPECT_EQ(finish.usage.cached_prompt_tokens, 0) << label << ": every row is computed";
        ASSERT_EQ(finish.embedding.size(), static_cast<size_t>(hidden)) << label;
        for (int k = 0; k < hidden; ++k) {
          ASSERT_NEAR(finish.embedding[k], expected[k], 1e-4 * std::max(1.0, std::abs(expected[k]))) << label << " element " << k;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PooledEmbeddings, ::testing::Values("gpt2-tiny", "qwen3-tiny"));

TEST(EmbeddingRequests, AreCheckedAsPromptsOnly) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  const int context = engine->model_config().max_positions;
  EngineRequest request;
  request.kind = RequestKind::kEmbed;
  request.prompt.assign(static_cast<size_t>(context), 42);  // a prompt only embedded may fill the context
  request.sampling.temperature = -5;                        // sampling is not read
  auto observer = std::make_shared<testing::CollectingObserver>();
  ASSERT_TRUE(engine->Submit(request, observer).ok());
  ASSERT_TRUE(observer->Wait());
  EXPECT_EQ(observer->finish().embedding.size(), static_cast<size_t>(engine->model_config().hidden_size));
  request.prompt.push_back(42);
  const absl::StatusOr<uint64_t> too_long = engine->Submit(request, std::make_shared<testing::CollectingObserver>());
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
  request.prompt = {42};
  request.constraint = OutputConstraint::JsonObject();
  const absl::StatusOr<uint64_t> constrained = engine->Submit(request, std::make_shared<testing::CollectingObserver>());
  EXPECT_EQ(constrained.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(constrained.status().message().find("constraint"), std::string::npos) << constrained.status();
}

}  // namespace
}  // namespace arach
