// Device memory of the paged KV cache: per layer, K and V of [num_blocks, block_size, kv_heads, head_dim] in the
// backend's kv_cache_dtype() (float32 or bf16 on the CPU, bf16 on the GPU).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/model/model_config.h"

namespace arach {

struct KvCacheConfig {
  int block_size = 16;  // tokens per block
  int num_blocks = 0;   // blocks in the pool (all layers share block ids)
  // When num_blocks is 0: size the pool to this fraction of the device memory free after the weights.
  double free_memory_fraction = 0;
  // One more block beyond num_blocks that no sequence owns: the KV slot of the padding sequences that fill a
  // decode step up to its step graph's batch size (ModelRunner). Not counted in num_blocks().
  bool padding_block = false;
  // Device memory the pool leaves free for what is loaded while serving (LoRA adapters up to --max_loras): taken
  // from what is available before the pool is sized or checked (ModelRunner::Create).
  size_t keep_free_bytes = 0;
};

class KvCache {
 public:
  // Bytes one block takes over all layers (K and V).
  static size_t BytesPerBlock(const ModelConfig& model, int block_size, DType dtype);
  // Allocates the pool on `backend`; RESOURCE_EXHAUSTED when the device lacks the memory.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(Backend& backend, const ModelConfig& model,
                                                         const KvCacheConfig& config);

  PagedKvLayer layer(int index) const;
  int num_blocks() const { return config_.num_blocks; }  // the blocks sequences may own: ids [0, num_blocks)
  // The block id of the padding block (KvCacheConfig::padding_block), or -1 without one.
  int padding_block() const { return config_.padding_block ? config_.num_blocks : -1; }
  int block_size() const { return config_.block_size; }
  size_t total_bytes() const { return total_bytes_; }
  DType dtype() const { return dtype_; }  // the backend's kv_cache_dtype()
  // Bytes one cached token takes over all layers (K and V): 2 * layers * kv_heads * head_dim * dtype size.
  size_t bytes_per_token() const { return total_bytes_ / (static_cast<size_t>(allocated_blocks()) * config_.block_size); }

 private:
  KvCache() = default;
  int allocated_blocks() const { return config_.num_blocks + (config_.padding_block ? 1 : 0); }
  KvCacheConfig config_;
  int num_kv_heads_ = 0;
  int head_dim_ = 0;
  DType dtype_ = DType::kF32;
  size_t total_bytes_ = 0;
  std::vector<std::unique_ptr<DeviceBuffer>> keys_;    // [num_layers]
  std::vector<std::unique_ptr<DeviceBuffer>> values_;  // [num_layers]
};

}  // namespace arach
