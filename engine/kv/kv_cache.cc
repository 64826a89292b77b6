#include "engine/kv/kv_cache.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

size_t KvCache::BytesPerBlock(const ModelConfig& model, int block_size, DType dtype) {
  return 2ull * model.num_layers * block_size * model.num_kv_heads * model.head_dim * DTypeSize(dtype);
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(Backend& backend, const ModelConfig& model,
                                                         const KvCacheConfig& config) {
  if (config.block_size <= 0 || config.num_blocks <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("KV cache: block_size (", config.block_size, ") and num_blocks (",
                                                   config.num_blocks, ") must be positive"));
  }
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->config_ = config;
  cache->num_kv_heads_ = model.num_kv_heads;
  cache->head_dim_ = model.head_dim;
  cache->dtype_ = backend.kv_cache_dtype();
  const size_t layer_bytes = static_cast<size_t>(cache->allocated_blocks()) * config.block_size * model.num_kv_heads *
                             model.head_dim * DTypeSize(cache->dtype_);
  for (int l = 0; l < model.num_layers; ++l) {
    ARACH_ASSIGN_OR_RETURN(auto k, backend.Allocate(layer_bytes));
    ARACH_ASSIGN_OR_RETURN(auto v, backend.Allocate(layer_bytes));
    backend.Fill(k->data(), layer_bytes, 0);
    backend.Fill(v->data(), layer_bytes, 0);
    cache->keys_.push_back(std::move(k));
    cache->values_.push_back(std::move(v));
  }
  cache->total_bytes_ = 2 * layer_bytes * model.num_layers;
  return cache;
}

PagedKvLayer KvCache::layer(int index) const {
  PagedKvLayer layer;
  layer.k = keys_[index]->data();
  layer.v = values_[index]->data();
  layer.dtype = dtype_;
  layer.block_size = config_.block_size;
  layer.num_kv_heads = num_kv_heads_;
  layer.head_dim = head_dim_;
  return layer;
}

}  // namespace arach
