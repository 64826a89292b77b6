// Workspace: scratch that grows on demand between steps and never while a step graph is recorded.
#include "engine/runner/workspace.h"

#include <memory>

#include "engine/backend/backend.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

TEST(Workspace, ScratchGrowsBetweenStepsAndKeepsItsAddressForSmallerShapes) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  Workspace workspace(**backend);
  auto small = workspace.Matrix(Scratch::kHidden, 4, 8);
  ASSERT_TRUE(small.ok()) << small.status();
  const uint64_t generation = workspace.generation();
  auto smaller = workspace.Matrix(Scratch::kHidden, 2, 8);
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  EXPECT_EQ(smaller->data, small->data);
  EXPECT_EQ(workspace.generation(), generation);
  auto larger = workspace.Matrix(Scratch::kHidden, 64, 8);
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_NE(workspace.generation(), generation);
  EXPECT_FALSE(workspace.TakeRefusedGrowth());
}

TEST(Workspace, WhileAStepGraphIsRecordedScratchThatWouldGrowIsRefusedAndRemembered) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  Workspace workspace(**backend);
  auto sized = workspace.Matrix(Scratch::kQkv, 8, 16);
  ASSERT_TRUE(sized.ok()) << sized.status();
  const uint64_t generation = workspace.generation();

  workspace.set_recording(true);
  auto same = workspace.Matrix(Scratch::kQkv, 8, 16);  // fits: the recorded kernels keep this address
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->data, sized->data);
  EXPECT_FALSE(workspace.TakeRefusedGrowth());
  auto grown = workspace.Matrix(Scratch::kQkv, 9, 16);
  EXPECT_EQ(grown.status().code(), absl::StatusCode::kFailedPrecondition) << grown.status();
  auto fresh = workspace.Matrix(Scratch::kLogits, 1, 4);  // a slot never allocated
  EXPECT_EQ(fresh.status().code(), absl::StatusCode::kFailedPrecondition) << fresh.status();
  EXPECT_EQ(workspace.generation(), generation);
  EXPECT_TRUE(workspace.TakeRefusedGrowth());
  EXPECT_FALSE(workspace.TakeRefusedGrowth());  // taken

  workspace.set_recording(false);
  auto after = workspace.Matrix(Scratch::kQkv, 9, 16);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE(workspace.generation(), generation);
  EXPECT_FALSE(workspace.TakeRefusedGrowth());
}

}  // namespace
}  // namespace arach
