// The similarity routes' shared arithmetic (server/similarity_scores.h): a cross-encoder's score from its class
// tokens' logits and /v1/classify's class probabilities, the cosine of two embeddings, and the ranking with top_n.
#include "server/similarity_scores.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace arach::server {
namespace {

TEST(ClassifierScore, TwoTokensGiveTheSecondsProbabilityBetweenThemOneItsSigmoid) {
  EXPECT_DOUBLE_EQ(ClassifierScore(std::vector<float>{1.5f, 1.5f}), 0.5);
  const double yes = std::exp(2.0), no = std::exp(-1.0);
  EXPECT_NEAR(ClassifierScore(std::vector<float>{-1.0f, 2.0f}), yes / (yes + no), 1e-12);
  EXPECT_NEAR(ClassifierScore(std::vector<float>{2.0f, -1.0f}), no / (yes + no), 1e-12);
  EXPECT_NEAR(ClassifierScore(std::vector<float>{-3.0f}), 1.0 / (1.0 + std::exp(3.0)), 1e-12);
}

TEST(CosineSimilarity, IsScaleFreeAndZeroForAZeroVector) {
  EXPECT_NEAR(CosineSimilarity(std::vector<float>{1, 2, 3}, std::vector<float>{2, 4, 6}), 1.0, 1e-12);
  EXPECT_NEAR(CosineSimilarity(std::vector<float>{1, 0}, std::vector<float>{0, 5}), 0.0, 1e-12);
  EXPECT_NEAR(CosineSimilarity(std::vector<float>{1, 0}, std::vector<float>{-2, 0}), -1.0, 1e-12);
  EXPECT_EQ(CosineSimilarity(std::vector<float>{0, 0}, std::vector<float>{1, 1}), 0.0);
}

TEST(RankBestFirst, BestFirstTiesInIndexOrderCutToTopN) {
  const std::vector<double> scores = {0.2, 0.9, 0.5, 0.9, -1.0};
  EXPECT_EQ(RankBestFirst(scores, std::nullopt), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_EQ(RankBestFirst(scores, 0), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_EQ(RankBestFirst(scores, 2), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(RankBestFirst(scores, 10), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(RankBestFirst({}, 3).empty());
}

TEST(ClassProbabilities, SoftmaxOfTheClassLogitsOrOneClassesSigmoid) {
  const std::vector<double> three = ClassProbabilities(std::vector<float>{1000.0f, 1001.0f, 998.0f});  // (no overflow)
  const double sum = 1 + std::exp(1.0) + std::exp(-2.0);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_NEAR(three[0], 1 / sum, 1e-12);
  EXPECT_NEAR(three[1], std::exp(1.0) / sum, 1e-12);
  EXPECT_NEAR(three[2], std::exp(-2.0) / sum, 1e-12);
  const std::vector<double> two = ClassProbabilities(std::vector<float>{-1.0f, 2.0f});
  EXPECT_NEAR(two[1], ClassifierScore(std::vector<float>{-1.0f, 2.0f}), 1e-12) << "the rerank score is the second's probability";
  EXPECT_NEAR(ClassProbabilities(std::vector<float>{0.5f})[0], 1 / (1 + std::exp(-0.5)), 1e-12);
}

}  // namespace
}  // namespace arach::server
