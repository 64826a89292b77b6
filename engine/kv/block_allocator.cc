#include "engine/kv/block_allocator.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

BlockAllocator::BlockAllocator(int num_blocks) : ref_counts_(num_blocks, 0) {
  free_.reserve(num_blocks);
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);  // hand out low ids first
}

absl::StatusOr<std::vector<int32_t>> BlockAllocator::Allocate(int count) {
  if (!CanAllocate(count)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV cache: ", count, " blocks needed, ", num_free(), " of ", num_blocks(), " free"));
  }
  std::vector<int32_t> blocks(count);
  for (int i = 0; i < count; ++i) {
    blocks[i] = free_.back();
    free_.pop_back();
    ref_counts_[blocks[i]] = 1;
  }
  return blocks;
}

void BlockAllocator::Retain(int32_t block) { ++ref_counts_[block]; }

void BlockAllocator::Release(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) {
    if (--ref_counts_[b] == 0) free_.push_back(b);
  }
}

int BlockTable::BlocksNeeded(int num_tokens) const {
  const int needed = (num_tokens + block_size_ - 1) / block_size_;
  return needed > static_cast<int>(blocks_.size()) ? needed - static_cast<int>(blocks_.size()) : 0;
}

absl::Status BlockTable::Reserve(int num_tokens, BlockAllocator& allocator) {
  const int extra = BlocksNeeded(num_tokens);
  if (extra == 0) return absl::OkStatus();
  ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> fresh, allocator.Allocate(extra));
  blocks_.insert(blocks_.end(), fresh.begin(), fresh.end());
  return absl::OkStatus();
}

void BlockTable::ReleaseAll(BlockAllocator& allocator) {
  allocator.Release(blocks_);
  blocks_.clear();
}

}  // namespace arach
