// Hands out KV-cache blocks by id with reference counts, and keeps a prefix cache: a full block whose
// K/V are computed can be registered under its content (hash chain of the tokens before it and in it,
// plus the model variant), so that a later sequence with the same prefix reuses it. Cached blocks that
// nobody uses stay cached until memory is needed, then are evicted least recently used first.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace arach {

// What a full block holds: its tokens, the chain hash of every block before it, the variant key (cached K/V
// differ between variants) and the cache namespace (CacheNamespaceOf: blocks of one namespace are never found
// from another, so that a tenant cannot learn another's prompts from prefix-cache timing).
struct BlockContent {
  uint64_t parent_hash = 0;  // Hash() of the previous block of the sequence; 0 for the first block
  uint64_t variant_key = 0;
  uint64_t cache_namespace = 0;  // 0: the shared namespace
  std::vector<int32_t> tokens;  // block_size tokens

  uint64_t Hash() const;
  bool operator==(const BlockContent& other) const {
    return parent_hash == other.parent_hash && variant_key == other.variant_key && cache_namespace == other.cache_namespace &&
           tokens == other.tokens;
  }
};

// The prefix-cache namespace of a request's cache salt (EngineRequest::cache_salt) and LoRA adapter (`lora_key`:
// unique to one load of it, e.g. its slot): 0 (shared) when both are empty, else a 64-bit digest of both that is
// never 0 (an adapter's K/V are its own).
uint64_t CacheNamespaceOf(std::string_view cache_salt, std::string_view lora_key = {});

class BlockAllocator {
 public:
  explicit BlockAllocator(int num_blocks);

  int num_blocks() const { return static_cast<int>(ref_counts_.size()); }
  // Blocks that can be handed out now: never-used or freed ones plus cached ones nobody holds.
  int num_free() const { return static_cast<int>(free_.size() + evictable_.size()); }
  // Blocks held by at least one sequence.
  int num_used() const { return num_blocks() - num_free(); }
  // Blocks registered in the prefix cache (held or not).
  int num_cached() const { return static_cast<int>(cache_.size()); }
  int64_t num_evictions() const { return evictions_; }
  bool CanAllocate(int count) const { return count <= num_free(); }

  // `count` fresh blocks with reference count 1, taking free blocks first, then evicting the least
  // recently used cached ones; RESOURCE_EXHAUSTED (allocating nothing) when too few are available.
  absl::StatusOr<std::vector<int32_t>> Allocate(int count);
  // Adds a reference to an allocated block.
  void Retain(int32_t block);
  // Drops one reference to each block; at zero a cached block becomes evictable, others are free.
  void Release(const std::vector<int32_t>& blocks);
  int ref_count(int32_t block) const { return ref_counts_[block]; }

  // Registers held block `block` as holding `content` (no-op when that content is already cached).
  void Register(int32_t block, const BlockContent& content);
  // The cached block holding exactly `content`, with a reference added for the caller; nullopt on a miss.
  std::optional<int32_t> Lookup(const BlockContent& content);

 private:
  struct CacheEntry {
    int32_t block;
    BlockContent content;
  };
  void Evict(int32_t block);

  std::vector<int32_t> free_;        // stack of free block ids (not cached)
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::unordered_map<uint64_t, CacheEntry> cache_;  // content hash -> block
  std::vector<uint64_t> block_hash_;                // [num_blocks]: hash a block is cached under, or 0
  std::vector<bool> is_cached_;                     // [num_blocks]
  std::list<int32_t> evictable_;                    // cached blocks with no reference, LRU first
  std::vector<std::list<int32_t>::iterator> evictable_pos_;  // [num_blocks], valid while evictable
  std::vector<bool> is_evictable_;                  // [num_blocks]
  int64_t evictions_ = 0;
};

// The blocks of one sequence, in position order: position p lives in block blocks[p / block_size].
// Under a sliding window the leading blocks no query will read again are given back early
// (ReleaseBefore); their ids stay in the table as placeholders that are never read.
class BlockTable {
 public:
  explicit BlockTable(int block_size) : block_size_(block_size) {}

  // Grows the table so that positions [0, num_tokens) have a block; allocates nothing on failure.
  absl::Status Reserve(int num_tokens, BlockAllocator& allocator);
  // Blocks needed beyond the current ones to hold num_tokens tokens.
  int BlocksNeeded(int num_tokens) const;
  // Appends blocks the caller already holds a reference to (prefix-cache hits).
  void Append(int32_t block) { blocks_.push_back(block); }
  // Returns every block still held to the allocator.
  void ReleaseAll(BlockAllocator& allocator);
  // Returns the leading blocks that lie wholly before `position` (and are still held).
  void ReleaseBefore(int position, BlockAllocator& allocator);
  // Blocks this table holds a reference to.
  int num_held() const { return static_cast<int>(blocks_.size()) - num_released_; }
  // Cache slot (block * block_size + offset) of position p.
  int32_t Slot(int position) const { return blocks_[position / block_size_] * block_size_ + position % block_size_; }

  const std::vector<int32_t>& blocks() const { return blocks_; }
  int block_size() const { return block_size_; }
  int capacity() const { return static_cast<int>(blocks_.size()) * block_size_; }

 private:
  int block_size_;
  std::vector<int32_t> blocks_;
  int num_released_ = 0;  // leading blocks already given back (sliding window)
};

}  // namespace arach
