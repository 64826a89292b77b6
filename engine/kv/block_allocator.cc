#include "engine/kv/block_allocator.h"

#include "absl/strings/str_cat.h"
#include "engine/core/random.h"
#include "engine/core/status.h"

namespace arach {

uint64_t BlockContent::Hash() const {
  uint64_t h = Mix64(parent_hash + 0x9e3779b97f4a7c15ull) ^ Mix64(variant_key + 0x632be59bd9b4e019ull) ^
               Mix64(cache_namespace + 0xd6e8feb86659fd93ull);
  for (int32_t t : tokens) h = Mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(t)) + 0x9e3779b97f4a7c15ull));
  return h == 0 ? 1 : h;  // 0 means "no parent"
}

uint64_t CacheNamespaceOf(std::string_view cache_salt, std::string_view lora_key) {
  if (cache_salt.empty() && lora_key.empty()) return 0;
  uint64_t h = Mix64(cache_salt.size() + 0x8ebc6af09c88c6e3ull);
  for (unsigned char byte : cache_salt) h = Mix64(h ^ (byte + 0x9e3779b97f4a7c15ull));
  h = Mix64(h ^ (lora_key.size() + 0x2545f4914f6cdd1dull));  // the salt's and the adapter's bytes cannot trade places
  for (unsigned char byte : lora_key) h = Mix64(h ^ (byte + 0x9e3779b97f4a7c15ull));
  return h == 0 ? 1 : h;
}

BlockAllocator::BlockAllocator(int num_blocks)
    : ref_counts_(num_blocks, 0),
      block_hash_(num_blocks, 0),
      is_cached_(num_blocks, false),
      evictable_pos_(num_blocks),
      is_evictable_(num_blocks, false) {
  free_.reserve(num_blocks);
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);  // hand out low ids first
}

void BlockAllocator::Evict(int32_t block) {
  cache_.erase(block_hash_[block]);
  block_hash_[block] = 0;
  is_cached_[block] = false;
  ++evictions_;
}

absl::StatusOr<std::vector<int32_t>> BlockAllocator::Allocate(int count) {
  if (!CanAllocate(count)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV cache: ", count, " blocks needed, ", num_free(), " of ", num_blocks(), " available"));
  }
  std::vector<int32_t> blocks(count);
  for (int i = 0; i < count; ++i) {
    int32_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = evictable_.front();
      evictable_.pop_front();
      is_evictable_[b] = false;
      Evict(b);
    }
    ref_counts_[b] = 1;
    blocks[i] = b;
  }
  return blocks;
}

void BlockAllocator::Retain(int32_t block) {
  if (ref_counts_[block]++ == 0 && is_evictable_[block]) {
    evictable_.erase(evictable_pos_[block]);
    is_evictable_[block] = false;
  }
}

void BlockAllocator::Release(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) {
    if (--ref_counts_[b] != 0) continue;
    if (is_cached_[b]) {
      evictable_.push_back(b);
      evictable_pos_[b] = std::prev(evictable_.end());
      is_evictable_[b] = true;
    } else {
      free_.push_back(b);
    }
  }
}

void BlockAllocator::Register(int32_t block, const BlockContent& content) {
  if (is_cached_[block]) return;
  const uint64_t hash = content.Hash();
  if (cache_.count(hash) != 0) return;  // the same content is cached in another block already
  cache_.emplace(hash, CacheEntry{block, content});
  block_hash_[block] = hash;
  is_cached_[block] = true;
}

std::optional<int32_t> BlockAllocator::Lookup(const BlockContent& content) {
  const auto it = cache_.find(content.Hash());
  if (it == cache_.end() || !(it->second.content == content)) return std::nullopt;
  Retain(it->second.block);
  return it->second.block;
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
  allocator.Release(std::vector<int32_t>(blocks_.begin() + num_released_, blocks_.end()));
  blocks_.clear();
  num_released_ = 0;
}

void BlockTable::ReleaseBefore(int position, BlockAllocator& allocator) {
  const int before = std::min(static_cast<int>(blocks_.size()), std::max(0, position) / block_size_);
  if (before <= num_released_) return;
  allocator.Release(std::vector<int32_t>(blocks_.begin() + num_released_, blocks_.begin() + before));
  num_released_ = before;
}

}  // namespace arach
