// KvCache: the pool's blocks and, where step graphs pad decode steps, the padding block beyond them.
#include "engine/kv/kv_cache.h"

#include <memory>

#include "engine/backend/backend.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

ModelConfig SmallModel() {
  ModelConfig model;
  model.num_layers = 2;
  model.num_heads = 4;
  model.num_kv_heads = 2;
  model.head_dim = 8;
  model.hidden_size = 32;
  return model;
}

TEST(KvCache, ThePaddingBlockLiesBeyondTheBlocksSequencesMayOwn) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  const ModelConfig model = SmallModel();
  const size_t per_block = KvCache::BytesPerBlock(model, /*block_size=*/4, (*backend)->kv_cache_dtype());
  // K and V of 2 layers, 4 tokens of 2 heads x 8 values each.
  EXPECT_EQ(per_block, 2u * 2 * 4 * 2 * 8 * DTypeSize((*backend)->kv_cache_dtype()));

  auto plain = KvCache::Create(**backend, model, KvCacheConfig{.block_size = 4, .num_blocks = 3});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*plain)->num_blocks(), 3);
  EXPECT_EQ((*plain)->padding_block(), -1);
  EXPECT_EQ((*plain)->total_bytes(), 3 * per_block);

  auto padded = KvCache::Create(**backend, model, KvCacheConfig{.block_size = 4, .num_blocks = 3, .padding_block = true});
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_EQ((*padded)->num_blocks(), 3);  // what the block allocator hands out: ids 0, 1, 2
  EXPECT_EQ((*padded)->padding_block(), 3);
  EXPECT_EQ((*padded)->total_bytes(), 4 * per_block);  // the padding block is allocated too
  EXPECT_EQ((*padded)->bytes_per_token(), (*plain)->bytes_per_token());
  EXPECT_EQ((*padded)->bytes_per_token(), per_block / 4);
}

}  // namespace
}  // namespace arach
