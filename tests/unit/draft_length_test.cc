// How many drafts a step checks (engine/spec/draft_length.h): the maximum while drafts are kept, fewer after a
// rejection, and pauses that grow while single drafts keep failing.
#include "engine/spec/draft_length.h"

#include <vector>

#include "gtest/gtest.h"

namespace arach {
namespace {

// Next() over `steps` steps, recording for each the drafts it got and the kept count `kept(drafted)`.
template <typename Kept>
std::vector<int> Play(DraftLength& length, int steps, Kept kept) {
  std::vector<int> counts;
  for (int i = 0; i < steps; ++i) {
    const int drafted = length.Next();
    counts.push_back(drafted);
    length.Record(drafted, kept(drafted));
  }
  return counts;
}

TEST(DraftLength, StaysAtTheMaximumWhileEveryDraftIsKept) {
  DraftLength length(8);
  EXPECT_EQ(Play(length, 4, [](int d) { return d; }), (std::vector<int>{8, 8, 8, 8}));
}

TEST(DraftLength, ARejectionShortensTheNextStepToOneMoreThanWereKept) {
  DraftLength length(8);
  EXPECT_EQ(length.Next(), 8);
  length.Record(8, 3);
  EXPECT_EQ(length.Next(), 4);
  length.Record(4, 4);  // all kept: doubles again
  EXPECT_EQ(length.Next(), 8);
}

TEST(DraftLength, RejectedSingleDraftsPauseLongerEachTime) {
  DraftLength length(8);
  // 8 rejected -> 1; 1 rejected -> pause 1; 1 rejected -> pause 2; then 4, 8, 16, 16.
  const std::vector<int> counts = Play(length, 40, [](int) { return 0; });
  const std::vector<int> expected = {8, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  EXPECT_EQ(counts, expected);
}

TEST(DraftLength, AKeptDraftEndsThePausesAndGrowsBackToTheMaximum) {
  DraftLength length(8);
  const std::vector<int> rejected = Play(length, 4, [](int) { return 0; });  // 8, 1, pause, 1
  EXPECT_EQ(rejected, (std::vector<int>{8, 1, 0, 1}));
  EXPECT_EQ(Play(length, 2, [](int d) { return d; }), (std::vector<int>{0, 0})) << "the pause after the second rejection";
  EXPECT_EQ(Play(length, 4, [](int d) { return d; }), (std::vector<int>{1, 2, 4, 8}));
  // The backoff was reset: one rejected single draft pauses one step again.
  length.Record(8, 0);
  EXPECT_EQ(Play(length, 3, [](int) { return 0; }), (std::vector<int>{1, 0, 1}));
}

TEST(DraftLength, AStepWithoutDraftsChangesNothing) {
  DraftLength length(4);
  length.Record(0, 0);
  EXPECT_EQ(length.Next(), 4);
}

}  // namespace
}  // namespace arach
