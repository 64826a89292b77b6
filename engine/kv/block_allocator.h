// Hands out KV-cache blocks by id with reference counts (blocks may be shared, e.g. by prefix caching).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace arach {

class BlockAllocator {
 public:
  explicit BlockAllocator(int num_blocks);

  int num_blocks() const { return static_cast<int>(ref_counts_.size()); }
  int num_free() const { return static_cast<int>(free_.size()); }
  bool CanAllocate(int count) const { return count <= num_free(); }
  // `count` fresh blocks with reference count 1; RESOURCE_EXHAUSTED (allocating nothing) when too few are free.
  absl::StatusOr<std::vector<int32_t>> Allocate(int count);
  // Adds a reference to an allocated block.
  void Retain(int32_t block);
  // Drops one reference to each block; a block whose count reaches zero is free again.
  void Release(const std::vector<int32_t>& blocks);
  int ref_count(int32_t block) const { return ref_counts_[block]; }

 private:
  std::vector<int32_t> free_;        // stack of free block ids
  std::vector<int32_t> ref_counts_;  // [num_blocks]
};

// The blocks of one sequence, in position order: position p lives in block blocks[p / block_size].
class BlockTable {
 public:
  explicit BlockTable(int block_size) : block_size_(block_size) {}

  // Grows the table so that positions [0, num_tokens) have a block; allocates nothing on failure.
  absl::Status Reserve(int num_tokens, BlockAllocator& allocator);
  // Blocks needed beyond the current ones to hold num_tokens tokens.
  int BlocksNeeded(int num_tokens) const;
  // Returns every block to the allocator.
  void ReleaseAll(BlockAllocator& allocator);
  // Cache slot (block * block_size + offset) of position p.
  int32_t Slot(int position) const { return blocks_[position / block_size_] * block_size_ + position % block_size_; }

  const std::vector<int32_t>& blocks() const { return blocks_; }
  int block_size() const { return block_size_; }
  int capacity() const { return static_cast<int>(blocks_.size()) * block_size_; }

 private:
  int block_size_;
  std::vector<int32_t> blocks_;
};

}  // namespace arach
