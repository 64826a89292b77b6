// The n-gram index (engine/spec/ngram_index.h) proposes exactly what ProposeByLookup's scan proposes, on random
// sources of small vocabularies (many repeated n-grams), as a prediction (a fixed source, any cursor) and as prompt
// lookup (the sequence grows a token at a time and is its own source), for every n-gram size range the engine uses
// and a few it does not.
#include "engine/spec/ngram_index.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int32_t> RandomTokens(std::mt19937& rng, int length, int vocab) {
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  for (int32_t& t : tokens) t = token(rng);
  return tokens;
}

void ExpectSameProposal(const DraftProposal& got, const DraftProposal& want, const std::string& label) {
  ASSERT_EQ(got.tokens, want.tokens) << label;
  if (!want.tokens.empty()) {
    ASSERT_EQ(got.source_position, want.source_position) << label;
  }
}

TEST(NgramIndex, ProposesWhatTheScanProposesForAPrediction) {
  std::mt19937 rng(11);
  for (const NgramSizes sizes : {NgramSizes{1, 4}, NgramSizes{2, 4}, NgramSizes{3, 3}, NgramSizes{1, 1}, NgramSizes{2, 6}}) {
    for (int trial = 0; trial < 40; ++trial) {
      const int vocab = 2 + trial % 6;
      const std::vector<int32_t> source = RandomTokens(rng, 1 + trial * 5, vocab);
      NgramIndex index(sizes);
      index.Extend(source);
      for (int query = 0; query < 30; ++query) {
        const std::vector<int32_t> recent = RandomTokens(rng, query % 7, vocab);
        const int cursor = static_cast<int>(rng() % (source.size() + 2));
        const int max_tokens = static_cast<int>(rng() % 6);
        ExpectSameProposal(index.Propose(recent, source, cursor, max_tokens), ProposeByLookup(recent, source, cursor, max_tokens, sizes),
                           "sizes " + std::to_string(sizes.min_n) + ".." + std::to_string(sizes.max_n) + " trial " +
                               std::to_string(trial) + " query " + std::to_string(query));
      }
    }
  }
}

TEST(NgramIndex, FollowsAGrowingSequenceAsPromptLookup) {
  std::mt19937 rng(5);
  for (const NgramSizes sizes : {NgramSizes{2, 4}, NgramSizes{1, 4}}) {
    for (int vocab : {2, 3, 8, 50}) {
      const std::vector<int32_t> all = RandomTokens(rng, 300, vocab);
      NgramIndex index(sizes);
      std::vector<int32_t> sequence;
      for (int32_t token : all) {
        sequence.push_back(token);
        index.Extend(sequence);
        ASSERT_EQ(index.indexed(), sequence.size());
        ExpectSameProposal(index.Propose(sequence, sequence, 0, 8), ProposeByLookup(sequence, sequence, 0, 8, sizes),
                           "vocab " + std::to_string(vocab) + " length " + std::to_string(sequence.size()));
      }
    }
  }
}

TEST(NgramIndex, ASourceThatNoLongerExtendsTheIndexedOneIsIndexedAgain) {
  NgramIndex index({1, 4});
  const std::vector<int32_t> first = {1, 2, 3, 1, 2, 4};
  index.Extend(first);
  EXPECT_THAT(index.Propose(std::vector<int32_t>{1, 2}, first, 0, 1).tokens, ElementsAre(3));
  const std::vector<int32_t> other = {1, 2, 9, 9};  // shorter
  index.Extend(other);
  EXPECT_EQ(index.indexed(), other.size());
  EXPECT_THAT(index.Propose(std::vector<int32_t>{1, 2}, other, 0, 1).tokens, ElementsAre(9));
  const std::vector<int32_t> rewritten = {1, 2, 9, 7, 1, 2, 5};  // as long and longer, its last indexed token other
  index.Extend(rewritten);
  EXPECT_THAT(index.Propose(std::vector<int32_t>{9, 7}, rewritten, 0, 2).tokens, ElementsAre(1, 2));
  EXPECT_THAT(index.Propose(std::vector<int32_t>{9, 9}, rewritten, 0, 2).tokens, ElementsAre(7, 1));  // "9 9" is gone: "9"
}

}  // namespace
}  // namespace arach
