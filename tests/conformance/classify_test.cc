// A causal LM as a classifier (RequestKind::kClassify, the cross-encoder of --classifier_from_token): the logits of
// the class tokens at the prompt's last position, checked against another path through the engine, the prompt
// log-probs of a scored request (log p(t | prompt) of the prompt followed by t), whose differences equal the
// logits' differences; on Qwen3's real tokenizer (Qwen3-Reranker's "no" and "yes") and under ARACH. And the
// classifier tokens resolved from the vocabulary, or refused naming the flag.
#include <cmath>
#include <memory>

#include "engine/bundle/model_bundle.h"
#include "engine/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::CollectingObserver;

FinishInfo RunRequest(Engine& engine, EngineRequest request) {
  auto observer = std::make_shared<CollectingObserver>();
  const absl::StatusOr<uint64_t> id = engine.Submit(std::move(request), observer);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return FinishInfo{};
  EXPECT_TRUE(observer->Wait());
  return observer->finish();
}

// log p(token | prompt), from the prompt log-probs of prompt + [token].
float NextTokenLogprob(Engine& engine, const std::vector<int32_t>& prompt, int32_t token, const Variant& variant) {
  EngineRequest scored;
  scored.kind = RequestKind::kScore;
  scored.prompt = prompt;
  scored.prompt.push_back(token);
  scored.variant = variant;
  const FinishInfo info = RunRequest(engine, scored);
  EXPECT_TRUE(info.status.ok()) << info.status;
  return info.prompt_logprobs.empty() ? NAN : info.prompt_logprobs.back();
}

TEST(Classify, TheClassTokensLogitsDifferAsTheirNextTokenLogprobs) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngine("qwen3-tiny");
  ASSERT_NE(engine, nullptr);
  const absl::StatusOr<std::vector<int32_t>> classes = ResolveClassifierTokens(engine->tokenizer(), {"no", "yes"});
  ASSERT_TRUE(classes.ok()) << classes.status();
  const std::vector<int32_t> ids = testing::ValidationTokens(engine->tokenizer());
  for (const bool arach : {false, true}) {
    SCOPED_TRACE(arach ? "arach" : "base");
    Variant variant;
    variant.arach = arach;
    for (const int length : {1, 7, 40}) {
      const std::vector<int32_t> prompt(ids.begin() + length, ids.begin() + 2 * length);
      EngineRequest request;
      request.kind = RequestKind::kClassify;
      request.prompt = prompt;
      request.class_token_ids = *classes;
      request.variant = variant;
      const FinishInfo info = RunRequest(*engine, request);
      ASSERT_TRUE(info.status.ok()) << info.status;
      ASSERT_EQ(info.class_logits.size(), 2u);
      EXPECT_EQ(info.usage.prompt_tokens, length);
      EXPECT_EQ(info.usage.completion_tokens, 0);
      const float no = NextTokenLogprob(*engine, prompt, (*classes)[0], variant);
      const float yes = NextTokenLogprob(*engine, prompt, (*classes)[1], variant);
      EXPECT_NEAR(info.class_logits[1] - info.class_logits[0], yes - no, 1e-4f) << length;
      EXPECT_GT(std::abs(yes - no), 1e-3f) << "the test needs prompts the model has an opinion on";
    }
  }
}

TEST(Classify, BadClassTokensAreRefusedNamingTheField) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngine("gpt2-tiny");
  ASSERT_NE(engine, nullptr);
  const int vocab = engine->model_config().vocab_size;
  const auto refusal = [&](RequestKind kind, std::vector<int32_t> classes) {
    EngineRequest request;
    request.kind = kind;
    request.prompt = {1, 2, 3};
    request.class_token_ids = std::move(classes);
    const absl::StatusOr<uint64_t> id = engine->Submit(request, std::make_shared<CollectingObserver>());
    return id.ok() ? std::string("accepted") : std::string(id.status().message());
  };
  EXPECT_EQ(refusal(RequestKind::kClassify, {}).rfind("class_token_ids: 1 to 16 tokens", 0), 0u) << refusal(RequestKind::kClassify, {});
  EXPECT_EQ(refusal(RequestKind::kClassify, {vocab}).rfind("class_token_ids", 0), 0u) << refusal(RequestKind::kClassify, {vocab});
  EXPECT_EQ(refusal(RequestKind::kClassify, std::vector<int32_t>(17, 1)).rfind("class_token_ids", 0), 0u);
  EXPECT_EQ(refusal(RequestKind::kGenerate, {1}), "class_token_ids: only a request to classify returns tokens' logits");
  EXPECT_EQ(refusal(RequestKind::kClassify, {5, 6}), "accepted");
}

TEST(ClassifierTokens, ResolvedFromTheVocabularyOrRefusedNamingTheFlag) {
  ARACH_REQUIRE_FIXTURES();
  absl::StatusOr<std::unique_ptr<Tokenizer>> qwen = LoadTokenizer(testing::FixturePath("qwen3-tiny"));
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  const absl::StatusOr<std::vector<int32_t>> ids = ResolveClassifierTokens(**qwen, {"no", "yes"});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (std::vector<int32_t>{*(*qwen)->TokenToId("no"), *(*qwen)->TokenToId("yes")}));
  EXPECT_EQ((*(*qwen)->Encode("yes", false)), std::vector<int32_t>{(*ids)[1]}) << "the token is the word's one token";
  EXPECT_TRUE(ResolveClassifierTokens(**qwen, {"yes"}).ok());
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{{}, {"no", "yes", "maybe"}, {"no", "not a token"}}) {
    const absl::Status refused = ResolveClassifierTokens(**qwen, bad).status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << bad.size();
    EXPECT_EQ(refused.message().rfind("--classifier_from_token: ", 0), 0u) << refused;
  }
  // A tokenizer that adds special tokens to a sequence (Llama 2's BOS): its pairs are not encoded here.
  absl::StatusOr<std::unique_ptr<Tokenizer>> llama = LoadTokenizer(testing::FixturePath("llama-stories260k"));
  ASSERT_TRUE(llama.ok()) << llama.status();
  ASSERT_NE(*(*llama)->Encode("a", true), *(*llama)->Encode("a", false)) << "the fixture adds BOS";
  const std::string some_token = *(*llama)->IdToToken((*(*llama)->Encode("a", false)).front());
  const absl::Status refused = ResolveClassifierTokens(**llama, {some_token}).status();
  EXPECT_NE(refused.message().find("adds special tokens to a sequence"), std::string::npos) << refused;
}

}  // namespace
}  // namespace arach
