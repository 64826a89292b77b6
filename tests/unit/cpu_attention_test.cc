// Paged attention on CPU against the naive reference (tests/testing/naive_attention.h) on contiguous K/V,
// for random block tables, lengths, GQA groups and ARACH hub offsets.
#include <cmath>
#include <numeric>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "tests/testing/naive_attention.h"

namespace arach {
namespace {

struct Sequence {
  int cached;  // tokens already in the cache
  int fresh;   // new tokens this call
  bool hub;
  float offset;
};

void RunCase(uint32_t seed, int heads, int kv_heads, int hd, int block_size, const std::vector<Sequence>& seqs) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int group = heads / kv_heads;
  const int num_blocks = 64;
  CpuBackend backend;
  std::vector<float> k_cache(static_cast<size_t>(num_blocks) * block_size * kv_heads * hd, 0.0f);
  std::vector<float> v_cache(k_cache.size(), 0.0f);
  std::vector<int32_t> free_blocks(num_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);

  // Per sequence: contiguous reference K/V per kv head, and its random block table.
  std::vector<std::vector<std::vector<float>>> ref_k(seqs.size()), ref_v(seqs.size());
  std::vector<int32_t> query_start = {0}, hub_start = {0}, table_start = {0}, tables, positions;
  std::vector<float> offsets;
  int num_verbal = 0, num_hub = 0, max_context = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int total = seqs[s].cached + seqs[s].fresh;
    const int blocks = (total + block_size - 1) / block_size;
    std::vector<int32_t> table(free_blocks.end() - blocks, free_blocks.end());
    free_blocks.resize(free_blocks.size() - blocks);
    ref_k[s].assign(kv_heads, std::vector<float>(static_cast<size_t>(total) * hd));
    ref_v[s].assign(kv_heads, std::vector<float>(static_cast<size_t>(total) * hd));
    for (int j = 0; j < total; ++j) {
      const int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      for (int g = 0; g < kv_heads; ++g) {
        for (int c = 0; c < hd; ++c) {
          const float kv = normal(rng), vv = normal(rng);
          ref_k[s][g][j * hd + c] = kv;
          ref_v[s][g][j * hd + c] = vv;
          k_cache[(slot * kv_heads + g) * hd + c] = kv;
          v_cache[(slot * kv_heads + g) * hd + c] = vv;
        }
      }
    }
    tables.insert(tables.end(), table.begin(), table.end());
    table_start.push_back(static_cast<int32_t>(tables.size()));
    for (int i = 0; i < seqs[s].fresh; ++i) positions.push_back(seqs[s].cached + i);
    num_verbal += seqs[s].fresh;
    query_start.push_back(num_verbal);
    num_hub += seqs[s].hub ? seqs[s].fresh : 0;
    hub_start.push_back(num_hub);
    offsets.push_back(seqs[s].offset);
    max_context = std::max(max_context, total);
  }
  const int rows = num_verbal + num_hub;
  std::vector<float> q(static_cast<size_t>(rows) * heads * hd), out(q.size(), -7.0f);
  std::vector<float> hub_k(static_cast<size_t>(std::max(num_hub, 1)) * kv_heads * hd), hub_v(hub_k.size());
  for (float& x : q) x = normal(rng);
  for (float& x : hub_k) x = normal(rng);
  for (float& x : hub_v) x = normal(rng);

  AttentionParams p;
  p.q = DeviceMatrix::Dense(q.data(), DType::kF32, rows, heads * hd);
  p.out = DeviceMatrix::Dense(out.data(), DType::kF32, rows, heads * hd);
  p.kv = PagedKvLayer{k_cache.data(), v_cache.data(), DType::kF32, block_size, kv_heads, hd};
  p.num_heads = heads;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.num_seqs = static_cast<int>(seqs.size());
  p.num_verbal_rows = num_verbal;
  p.query_start = query_start.data();
  p.positions = positions.data();
  p.block_table_start = table_start.data();
  p.block_tables = tables.data();
  p.max_context = max_context;
  p.num_hub_rows = num_hub;
  p.hub_start = hub_start.data();
  p.hub_logit_offset = offsets.data();
  p.hub_k = DeviceMatrix::Dense(hub_k.data(), DType::kF32, num_hub, kv_heads * hd);
  p.hub_v = DeviceMatrix::Dense(hub_v.data(), DType::kF32, num_hub, kv_heads * hd);
  backend.Attention(p);

  float worst = 0.0f;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int i = 0; i < seqs[s].fresh; ++i) {
      const int limit = seqs[s].cached + i;
      for (int stream = 0; stream < (seqs[s].hub ? 2 : 1); ++stream) {
        const int row = stream == 0 ? query_start[s] + i : num_verbal + hub_start[s] + i;
        for (int h = 0; h < heads; ++h) {
          const int g = h / group;
          const float* hk = seqs[s].hub ? &hub_k[(static_cast<size_t>(hub_start[s] + i) * kv_heads + g) * hd] : nullptr;
          const float* hv = seqs[s].hub ? &hub_v[(static_cast<size_t>(hub_start[s] + i) * kv_heads + g) * hd] : nullptr;
          const std::vector<float> expected =
              testing::NaiveAttention(&q[(static_cast<size_t>(row) * heads + h) * hd], testing::RowPointers(ref_k[s][g], hd),
                                      testing::RowPointers(ref_v[s][g], hd), limit, hk, hv, seqs[s].offset, p.scale, hd);
          for (int c = 0; c < hd; ++c) {
            worst = std::max(worst, std::fabs(expected[c] - out[(static_cast<size_t>(row) * heads + h) * hd + c]));
          }
        }
      }
    }
  }
  EXPECT_LT(worst, 2e-5f) << "seed " << seed;
}

TEST(CpuAttention, MatchesNaiveReferenceWithoutHub) {
  RunCase(1, 4, 4, 16, 4, {{0, 7, false, 0}, {5, 1, false, 0}, {0, 1, false, 0}, {13, 20, false, 0}});
}

TEST(CpuAttention, MatchesNaiveReferenceWithHubTermAndGqa) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<Sequence> seqs;
    const int count = 1 + static_cast<int>(rng() % 5);
    for (int s = 0; s < count; ++s) {
      seqs.push_back({static_cast<int>(rng() % 40), 1 + static_cast<int>(rng() % 30), rng() % 2 == 0,
                      std::uniform_real_distribution<float>(-2.0f, 1.0f)(rng)});
    }
    RunCase(seed, 8, seed % 2 == 0 ? 2 : 8, 8 * (1 + static_cast<int>(seed % 3)), 1 + static_cast<int>(rng() % 8), seqs);
  }
}

}  // namespace
}  // namespace arach
