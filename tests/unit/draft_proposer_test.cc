// Draft proposals by n-gram lookup (engine/spec/draft_proposer.h): the longest suffix n-gram wins, the occurrence at
// or after the cursor is preferred, the source's own tail is no match, and the count is bounded.
#include "engine/spec/draft_proposer.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(DraftProposer, TheLongestSuffixNgramChoosesTheContinuation) {
  // "5 6" occurs twice; "4 5 6" once, followed by 7 8 9.
  const std::vector<int32_t> source = {5, 6, 1, 2, 4, 5, 6, 7, 8, 9};
  const std::vector<int32_t> recent = {3, 4, 5, 6};
  const DraftProposal p = ProposeByLookup(recent, source, 0, 3, {1, 4});
  EXPECT_THAT(p.tokens, ElementsAre(7, 8, 9));
  EXPECT_EQ(p.source_position, 7);
}

TEST(DraftProposer, TheCursorPrefersTheOccurrenceWhereTheLastDraftEnded) {
  const std::vector<int32_t> source = {1, 2, 10, 1, 2, 20, 1, 2, 30};
  const std::vector<int32_t> recent = {1, 2};
  EXPECT_THAT(ProposeByLookup(recent, source, 0, 1, {1, 4}).tokens, ElementsAre(10));
  EXPECT_THAT(ProposeByLookup(recent, source, 3, 1, {1, 4}).tokens, ElementsAre(20));
  EXPECT_THAT(ProposeByLookup(recent, source, 6, 1, {1, 4}).tokens, ElementsAre(30));
  // Past every occurrence: the last one.
  EXPECT_THAT(ProposeByLookup(recent, source, 9, 1, {1, 4}).tokens, ElementsAre(30));
}

TEST(DraftProposer, ShorterNgramsDownToTheMinimumAreTried) {
  const std::vector<int32_t> source = {9, 3, 4};
  const std::vector<int32_t> recent = {7, 8, 9};
  EXPECT_THAT(ProposeByLookup(recent, source, 0, 5, {1, 4}).tokens, ElementsAre(3, 4));
  EXPECT_THAT(ProposeByLookup(recent, source, 0, 5, {2, 4}).tokens, IsEmpty());
}

TEST(DraftProposer, TheSourcesOwnTailIsNoMatch) {
  // Prompt lookup: the sequence is both; its last n-gram occurs earlier once.
  const std::vector<int32_t> sequence = {1, 2, 3, 4, 5, 1, 2};
  const DraftProposal p = ProposeByLookup(sequence, sequence, 0, 2, {2, 4});
  EXPECT_THAT(p.tokens, ElementsAre(3, 4));
  const std::vector<int32_t> unique = {1, 2, 3, 4};
  EXPECT_THAT(ProposeByLookup(unique, unique, 0, 2, {1, 4}).tokens, IsEmpty());
}

TEST(DraftProposer, NothingToProposeFromNothing) {
  const std::vector<int32_t> source = {1, 2, 3};
  const std::vector<int32_t> none;
  EXPECT_THAT(ProposeByLookup(none, source, 0, 4, {1, 4}).tokens, IsEmpty());
  EXPECT_THAT(ProposeByLookup(source, none, 0, 4, {1, 4}).tokens, IsEmpty());
  EXPECT_THAT(ProposeByLookup(std::vector<int32_t>{1}, source, 0, 0, {1, 4}).tokens, IsEmpty());
  // Fewer tokens follow than asked: those there are.
  EXPECT_THAT(ProposeByLookup(std::vector<int32_t>{2}, source, 0, 4, {1, 4}).tokens, ElementsAre(3));
}

}  // namespace
}  // namespace arach
