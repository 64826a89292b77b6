#include "engine/kv/block_allocator.h"

#include "gtest/gtest.h"

namespace arach {
namespace {

TEST(BlockAllocator, AllocatesReleasesAndCountsReferences) {
  BlockAllocator allocator(4);
  auto a = allocator.Allocate(3);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(allocator.num_free(), 1);
  auto too_many = allocator.Allocate(2);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(allocator.num_free(), 1) << "a failed allocation takes nothing";
  allocator.Retain((*a)[0]);
  allocator.Release(*a);
  EXPECT_EQ(allocator.num_free(), 3) << "the retained block stays allocated";
  EXPECT_EQ(allocator.ref_count((*a)[0]), 1);
  allocator.Release({(*a)[0]});
  EXPECT_EQ(allocator.num_free(), 4);
}

TEST(BlockTable, ReservesWholeBlocksAndMapsSlots) {
  BlockAllocator allocator(8);
  BlockTable table(4);
  EXPECT_EQ(table.BlocksNeeded(9), 3);
  ASSERT_TRUE(table.Reserve(9, allocator).ok());
  EXPECT_EQ(table.blocks().size(), 3u);
  EXPECT_EQ(table.capacity(), 12);
  EXPECT_EQ(table.Slot(5), table.blocks()[1] * 4 + 1);
  ASSERT_TRUE(table.Reserve(12, allocator).ok());
  EXPECT_EQ(table.blocks().size(), 3u) << "no new block while capacity suffices";
  EXPECT_FALSE(table.Reserve(40, allocator).ok());
  EXPECT_EQ(table.blocks().size(), 3u);
  table.ReleaseAll(allocator);
  EXPECT_EQ(allocator.num_free(), 8);
}

}  // namespace
}  // namespace arach
