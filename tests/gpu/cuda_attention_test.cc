// CUDA paged attention against a naive float32 reference on random batches: random block tables (shuffled
// pool), prefill chunks and single decode rows, grouped-query heads, and the ARACH hub term with random
// offsets on some sequences.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/backend/attention_params.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/testing/naive_attention.h"

namespace arach {
namespace {

struct SeqSpec {
  int context;  // positions cached after this step
  int rows;     // new rows this step (the last `rows` positions)
  bool hub;
  float offset;
};

struct Shape {
  int heads, kv_heads, head_dim, block_size;
};

void RunCase(Backend& cuda, const Shape& shape, const std::vector<SeqSpec>& seqs, uint32_t seed) {
  std::mt19937 rng(seed);
  const int hd = shape.head_dim, slot_elems = shape.kv_heads * hd;
  // Block tables: each sequence takes blocks from a shuffled pool.
  int blocks_needed = 0;
  for (const SeqSpec& s : seqs) blocks_needed += (s.context + shape.block_size - 1) / shape.block_size;
  const int num_blocks = blocks_needed + 3;
  std::vector<int32_t> pool(num_blocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);

  std::vector<int32_t> query_start = {0}, hub_start = {0}, table_start = {0}, tables, positions;
  std::vector<float> offsets;
  for (const SeqSpec& s : seqs) {
    for (int i = 0; i < s.rows; ++i) positions.push_back(s.context - s.rows + i);
    query_start.push_back(query_start.back() + s.rows);
    hub_start.push_back(hub_start.back() + (s.hub ? s.rows : 0));
    const int n = (s.context + shape.block_size - 1) / shape.block_size;
    for (int b = 0; b < n; ++b) tables.push_back(pool[tables.size()]);
    table_start.push_back(static_cast<int32_t>(tables.size()));
    offsets.push_back(s.offset);
  }
  const int verbal = query_start.back(), hub_rows = hub_start.back(), rows = verbal + hub_rows;

  const std::vector<float> k_cache = testing::RandomBf16Values(rng, static_cast<size_t>(num_blocks) * shape.block_size * slot_elems, 1.0f);
  const std::vector<float> v_cache = testing::RandomBf16Values(rng, k_cache.size(), 1.0f);
  const std::vector<float> q = testing::RandomBf16Values(rng, static_cast<size_t>(rows) * shape.heads * hd, 1.0f);
  const std::vector<float> hub_k = testing::RandomBf16Values(rng, static_cast<size_t>(std::max(hub_rows, 1)) * slot_elems, 1.0f);
  const std::vector<float> hub_v = testing::RandomBf16Values(rng, hub_k.size(), 1.0f);

  auto upload = [&](const std::vector<float>& host, int64_t r, int64_t c) {
    auto buffer = *cuda.Allocate(host.size() * 2);
    cuda.UploadFloat(buffer->data(), DType::kBF16, host.data(), host.size());
    return std::make_pair(std::move(buffer), DeviceMatrix::Dense(nullptr, DType::kBF16, r, c));
  };
  auto [k_buf, k_view] = upload(k_cache, 1, 1);
  auto [v_buf, v_view] = upload(v_cache, 1, 1);
  auto [q_buf, q_view] = upload(q, rows, shape.heads * hd);
  auto [hk_buf, hk_view] = upload(hub_k, std::max(hub_rows, 1), slot_elems);
  auto [hv_buf, hv_view] = upload(hub_v, std::max(hub_rows, 1), slot_elems);
  auto out_buf = *cuda.Allocate(q.size() * 2);
  auto d_query_start = testing::UploadInts(cuda, query_start), d_hub_start = testing::UploadInts(cuda, hub_start);
  auto d_table_start = testing::UploadInts(cuda, table_start), d_tables = testing::UploadInts(cuda, tables);
  auto d_positions = testing::UploadInts(cuda, positions);
  auto d_offsets = *cuda.Allocate(offsets.size() * sizeof(float));
  cuda.CopyToDevice(d_offsets->data(), offsets.data(), offsets.size() * sizeof(float));

  AttentionParams p;
  p.q = DeviceMatrix::Dense(q_buf->data(), DType::kBF16, rows, shape.heads * hd);
  p.out = DeviceMatrix::Dense(out_buf->data(), DType::kBF16, rows, shape.heads * hd);
  p.kv = PagedKvLayer{k_buf->data(), v_buf->data(), DType::kBF16, shape.block_size, shape.kv_heads, hd};
  p.num_heads = shape.heads;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.num_seqs = static_cast<int>(seqs.size());
  p.num_verbal_rows = verbal;
  p.query_start = static_cast<int32_t*>(d_query_start->data());
  p.positions = static_cast<int32_t*>(d_positions->data());
  p.block_table_start = static_cast<int32_t*>(d_table_start->data());
  p.block_tables = static_cast<int32_t*>(d_tables->data());
  for (const SeqSpec& s : seqs) p.max_context = std::max(p.max_context, s.context);
  p.num_hub_rows = hub_rows;
  p.hub_start = static_cast<int32_t*>(d_hub_start->data());
  p.hub_logit_offset = static_cast<float*>(d_offsets->data());
  p.hub_k = DeviceMatrix::Dense(hk_buf->data(), DType::kBF16, std::max(hub_rows, 1), slot_elems);
  p.hub_v = DeviceMatrix::Dense(hv_buf->data(), DType::kBF16, std::max(hub_rows, 1), slot_elems);
  cuda.Attention(p);
  ASSERT_TRUE(cuda.Synchronize().ok());
  const std::vector<float> got = testing::Download(cuda, p.out);

  float worst = 0.0f;
  const int group = shape.heads / shape.kv_heads;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int i = 0; i < seqs[s].rows; ++i) {
      const int row = query_start[s] + i;
      const int limit = positions[row];
      for (int h = 0; h < shape.heads; ++h) {
        const int g = h / group;
        std::vector<const float*> keys, values;
        for (int j = 0; j <= limit; ++j) {
          const int64_t slot = static_cast<int64_t>(tables[table_start[s] + j / shape.block_size]) * shape.block_size + j % shape.block_size;
          keys.push_back(&k_cache[slot * slot_elems + g * hd]);
          values.push_back(&v_cache[slot * slot_elems + g * hd]);
        }
        const int hub_index = hub_start[s] + i;
        const float* hk = seqs[s].hub ? &hub_k[static_cast<size_t>(hub_index) * slot_elems + g * hd] : nullptr;
        const float* hv = seqs[s].hub ? &hub_v[static_cast<size_t>(hub_index) * slot_elems + g * hd] : nullptr;
        std::vector<int> q_rows = {row};
        if (seqs[s].hub) q_rows.push_back(verbal + hub_index);
        for (int qr : q_rows) {
          const float* qv = &q[(static_cast<size_t>(qr) * shape.heads + h) * hd];
          const std::vector<float> want = testing::NaiveAttention(qv, keys, values, limit, hk, hv, seqs[s].offset, p.scale, hd);
          for (int d = 0; d < hd; ++d) {
            worst = std::max(worst, std::fabs(got[(static_cast<size_t>(qr) * shape.heads + h) * hd + d] - want[d]));
          }
        }
      }
    }
  }
  // Outputs are convex combinations of unit-scale values, stored in bf16.
  EXPECT_LT(worst, 2e-2f) << "heads " << shape.heads << "/" << shape.kv_heads << " head_dim " << hd << " block "
                          << shape.block_size << " seed " << seed;
}

TEST(CudaPagedAttention, MatchesNaiveFloat32OnRandomBatches) {
  ARACH_REQUIRE_GPU();
  auto cuda = CreateBackend(DeviceKind::kCuda);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const std::vector<Shape> shapes = {{4, 4, 64, 16}, {8, 2, 128, 16}, {6, 3, 96, 4}, {2, 1, 256, 32}, {12, 12, 64, 8}};
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    std::mt19937 rng(seed * 7919);
    for (const Shape& shape : shapes) {
      std::vector<SeqSpec> seqs;
      const int num_seqs = 1 + static_cast<int>(rng() % 6);
      for (int s = 0; s < num_seqs; ++s) {
        SeqSpec spec;
        spec.context = 1 + static_cast<int>(rng() % 300);
        const bool decode = rng() % 2 == 0;
        spec.rows = decode ? 1 : 1 + static_cast<int>(rng() % spec.context);
        spec.hub = rng() % 2 == 0;
        spec.offset = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
        seqs.push_back(spec);
      }
      RunCase(**cuda, shape, seqs, seed);
    }
  }
}

TEST(CudaPagedAttention, HubDominatesWithLargeOffsetAndVanishesWithVeryNegative) {
  ARACH_REQUIRE_GPU();
  auto cuda = CreateBackend(DeviceKind::kCuda);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  // Extreme offsets exercise the running-max rescaling from both sides.
  RunCase(**cuda, {4, 2, 64, 16}, {{40, 40, true, 30.0f}, {17, 1, true, -30.0f}, {33, 5, false, 0.0f}}, 99);
}

}  // namespace
}  // namespace arach
