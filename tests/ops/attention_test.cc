// Paged attention, written once and run on every device, against the naive reference
// (tests/testing/naive_attention.h) on random batches: shuffled block tables, prefill chunks and single
// decode rows, grouped-query heads, and the ARACH hub term with random offsets on some sequences; the
// attention-mass diagnostics (sink and hub probabilities summed per sequence and head) against the same
// reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "engine/backend/attention_params.h"
#include "gtest/gtest.h"
#include "tests/testing/devices.h"
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

class PagedAttention : public testing::DeviceFixture {
 protected:
  // `window` > 0: each query sees only the last `window` positions (Mistral's sliding window).
  // `with_mass`: also ask for the attention-mass diagnostics and check them. `kv_dtype`: the cache's element type
  // (default: the device's activation dtype); the reference reads the same rounded keys and values.
  void RunCase(const Shape& shape, const std::vector<SeqSpec>& seqs, uint32_t seed, int window = 0, bool with_mass = false,
               std::optional<DType> kv_dtype = std::nullopt);
};

void PagedAttention::RunCase(const Shape& shape, const std::vector<SeqSpec>& seqs, uint32_t seed, int window, bool with_mass,
                             std::optional<DType> kv_dtype) {
  const DType cache_dtype = kv_dtype.value_or(dtype_);
  auto round_to_cache = [&](std::vector<float> values) {
    if (cache_dtype == DType::kBF16) for (float& x : values) x = BFloat16ToFloat(FloatToBFloat16(x));
    if (cache_dtype == DType::kF16) for (float& x : values) x = HalfToFloat(FloatToHalf(x));
    return values;
  };
  std::mt19937 rng(seed);
  const int hd = shape.head_dim, slot_elems = shape.kv_heads * hd;
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
  const std::vector<float> k_cache = round_to_cache(Random(static_cast<size_t>(num_blocks) * shape.block_size * slot_elems));
  const std::vector<float> v_cache = round_to_cache(Random(k_cache.size()));
  const std::vector<float> q = Random(static_cast<size_t>(rows) * shape.heads * hd);
  const std::vector<float> hub_k = Random(static_cast<size_t>(std::max(hub_rows, 1)) * slot_elems);
  const std::vector<float> hub_v = Random(hub_k.size());

  AttentionParams p;
  p.q = Upload(q, rows, shape.heads * hd);
  p.out = Zeros(rows, shape.heads * hd);
  const DeviceMatrix k = Upload(k_cache, num_blocks * shape.block_size, slot_elems, cache_dtype);
  const DeviceMatrix v = Upload(v_cache, num_blocks * shape.block_size, slot_elems, cache_dtype);
  p.kv = PagedKvLayer{k.data, v.data, cache_dtype, shape.block_size, shape.kv_heads, hd};
  p.num_heads = shape.heads;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.num_seqs = static_cast<int>(seqs.size());
  p.num_verbal_rows = verbal;
  p.query_start = UploadInts(query_start);
  p.positions = UploadInts(positions);
  p.block_table_start = UploadInts(table_start);
  p.block_tables = UploadInts(tables);
  p.sliding_window = window;
  p.num_hub_rows = hub_rows;
  p.hub_start = UploadInts(hub_start);
  p.hub_logit_offset = UploadFloats(offsets);
  p.hub_k = Upload(hub_k, std::max(hub_rows, 1), slot_elems).Rows(0, hub_rows);
  p.hub_v = Upload(hub_v, std::max(hub_rows, 1), slot_elems).Rows(0, hub_rows);
  // [num_seqs, kAttentionMassKinds, heads], starting from 1 so that the kernel is seen to add, not overwrite.
  const size_t mass_size = seqs.size() * kAttentionMassKinds * shape.heads;
  const DeviceMatrix mass = Upload(std::vector<float>(mass_size, 1.0f), 1, static_cast<int64_t>(mass_size), DType::kF32);
  if (with_mass) p.attention_mass = mass.As<float>();
  AttentionBatchLayout layout;
  layout.query_start = query_start;
  layout.positions = positions;
  layout.block_table_start = table_start;
  layout.block_tables = tables;
  layout.hub_start = hub_start;
  layout.block_size = shape.block_size;
  layout.num_heads = shape.heads;
  layout.num_kv_heads = shape.kv_heads;
  layout.head_dim = hd;
  const absl::Status planned = backend_->PlanAttention(layout);
  ASSERT_TRUE(planned.ok()) << planned;
  backend_->Attention(p);
  std::vector<double> want_mass(mass_size, 1.0);
  auto mass_at = [&](size_t s, int kind, int h) -> double& { return want_mass[(s * kAttentionMassKinds + kind) * shape.heads + h]; };

  std::vector<float> want(q.size(), 0.0f);
  const int group = shape.heads / shape.kv_heads;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int i = 0; i < seqs[s].rows; ++i) {
      const int row = query_start[s] + i;
      const int limit = positions[row];
      const int first = window > 0 ? std::max(0, limit - window + 1) : 0;
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
          testing::NaiveMass row_mass;
          const std::vector<float> o = testing::NaiveAttention(&q[(static_cast<size_t>(qr) * shape.heads + h) * hd], keys, values,
                                                               first, limit, hk, hv, seqs[s].offset, p.scale, hd, &row_mass);
          std::copy(o.begin(), o.end(), &want[(static_cast<size_t>(qr) * shape.heads + h) * hd]);
          const bool hub_row = qr >= verbal;
          mass_at(s, hub_row ? kHubRowsOnSink : kVerbalRowsOnSink, h) += row_mass.sink;
          mass_at(s, hub_row ? kHubRowsOnHub : kVerbalRowsOnHub, h) += row_mass.hub;
        }
      }
    }
  }
  // Outputs are convex combinations of unit-scale values.
  const float ratio = testing::WorstToleranceRatio(Download(p.out), want, testing::ToleranceOf(dtype_));
  EXPECT_LE(ratio, 1.0f) << "heads " << shape.heads << "/" << shape.kv_heads << " head_dim " << hd << " block "
                         << shape.block_size << " window " << window << " seed " << seed;
  // Without the diagnostics the buffer is untouched; with them each slot is 1 + a sum of probabilities
  // over up to a few hundred rows (absolute tolerance per row of the dtype's).
  const std::vector<float> got_mass = Download(mass);
  for (size_t i = 0; i < mass_size; ++i) {
    const double expected = with_mass ? want_mass[i] : 1.0;
    const double rows_summed = std::max(1.0, want_mass[i]);
    EXPECT_NEAR(got_mass[i], expected, testing::ToleranceOf(dtype_).atol * rows_summed + 1e-5 * expected)
        << "mass slot " << i << " (sequence " << i / (kAttentionMassKinds * shape.heads) << ", kind "
        << i / shape.heads % kAttentionMassKinds << ", head " << i % shape.heads << ") seed " << seed << " window " << window;
  }
}

// 1 to max_seqs sequences of 1-300 cached positions, each a decode row or a prefill chunk, half with the hub at a
// random offset.
std::vector<SeqSpec> RandomSeqs(std::mt19937& rng, int max_seqs) {
  std::vector<SeqSpec> seqs;
  const int num_seqs = 1 + static_cast<int>(rng() % max_seqs);
  for (int s = 0; s < num_seqs; ++s) {
    SeqSpec spec;
    spec.context = 1 + static_cast<int>(rng() % 300);
    spec.rows = rng() % 2 == 0 ? 1 : 1 + static_cast<int>(rng() % spec.context);
    spec.hub = rng() % 2 == 0;
    spec.offset = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
    seqs.push_back(spec);
  }
  return seqs;
}

TEST_P(PagedAttention, MatchesTheNaiveReferenceOnRandomBatches) {
  const std::vector<Shape> shapes = {{4, 4, 64, 16}, {8, 2, 128, 16}, {6, 3, 96, 4}, {2, 1, 256, 32}, {12, 12, 64, 8}, {8, 4, 16, 1}};
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    std::mt19937 rng(seed * 7919);
    for (const Shape& shape : shapes) {
      RunCase(shape, RandomSeqs(rng, 6), seed, /*window=*/0, /*with_mass=*/seed % 2 == 0);
    }
  }
}

// Half-width caches (--kv_cache_dtype f16 / bf16; the GPU's is its compute type): decode rows read them directly,
// prefill chunks gather them, both widened to float32; against the reference on the same rounded keys and values.
TEST_P(PagedAttention, HalfWidthCachesOnRandomBatches) {
  // {10, 2, 64, 16}: a group of 5 query heads per KV head, which FlashInfer's decode kernel is not built for (its
  // prefill kernels take the CUDA backend's decode rows of it).
  const std::vector<Shape> shapes = {{4, 4, 64, 16}, {8, 2, 128, 16}, {6, 3, 96, 4}, {8, 4, 16, 1}, {10, 2, 64, 16}};
  for (const DType cache_dtype : {DType::kF16, DType::kBF16}) {
    if (GetParam() == DeviceKind::kCuda && cache_dtype != dtype_) continue;  // the GPU caches in its compute type
    for (uint32_t seed = 11; seed <= 13; ++seed) {
      std::mt19937 rng(seed * 104729);
      for (const Shape& shape : shapes) {
        RunCase(shape, RandomSeqs(rng, 5), seed, /*window=*/seed == 12 ? 37 : 0, /*with_mass=*/seed != 12, cache_dtype);
      }
    }
  }
}

TEST_P(PagedAttention, SlidingWindowSeesOnlyTheLastPositions) {
  // Windows smaller and larger than a block, prefill chunks and decode rows, with and without the hub.
  for (int window : {1, 3, 16, 40}) {
    std::mt19937 rng(window);
    for (const Shape& shape : std::vector<Shape>{{4, 2, 32, 4}, {8, 8, 64, 16}}) {
      std::vector<SeqSpec> seqs;
      for (int s = 0; s < 4; ++s) {
        SeqSpec spec;
        spec.context = 1 + static_cast<int>(rng() % 120);
        spec.rows = s % 2 == 0 ? 1 : 1 + static_cast<int>(rng() % spec.context);
        spec.hub = s >= 2;
        spec.offset = -0.5f;
        seqs.push_back(spec);
      }
      RunCase(shape, seqs, 7 + window, window, /*with_mass=*/true);
    }
  }
}

// Decode steps (one row per sequence) with the hub on some or all sequences: the CUDA backend attends each
// sequence's verbal and hub queries as one request with twice the heads (grouped_hub_heads.h): 1, 2 and 4 query
// heads per KV head on FlashInfer's decode kernel, 3 and 8 on its prefill kernels. Offsets -inf included (a
// sequence that is not ARACH in a step graph of ARACH ones: its hub weighs nothing).
TEST_P(PagedAttention, DecodeStepsWithTheHubOnSomeOrAllSequences) {
  const std::vector<Shape> shapes = {{12, 12, 64, 16}, {4, 2, 128, 16}, {8, 2, 64, 8}, {6, 2, 64, 16}, {8, 1, 128, 4}};
  const float kNoHub = -std::numeric_limits<float>::infinity();
  for (uint32_t seed = 21; seed <= 24; ++seed) {
    std::mt19937 rng(seed);
    for (const Shape& shape : shapes) {
      std::vector<SeqSpec> seqs;
      const int num_seqs = 1 + static_cast<int>(rng() % 7);
      for (int s = 0; s < num_seqs; ++s) {
        SeqSpec spec;
        spec.context = 1 + static_cast<int>(rng() % 200);
        spec.rows = 1;
        spec.hub = seed % 2 == 0 || s % 2 == 0;
        spec.offset = s % 3 == 2 ? kNoHub : std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
        seqs.push_back(spec);
      }
      RunCase(shape, seqs, seed, /*window=*/seed == 23 ? 29 : 0, /*with_mass=*/seed >= 23);
    }
  }
}

TEST_P(PagedAttention, HubDominatesWithLargeOffsetAndVanishesWithVeryNegative) {
  // Extreme offsets exercise the running-max rescaling from both sides.
  RunCase({4, 2, 64, 16}, {{40, 40, true, 30.0f}, {17, 1, true, -30.0f}, {33, 5, false, 0.0f}}, 99, 0, /*with_mass=*/true);
}

TEST_P(PagedAttention, UnsupportedHeadSizesAreRefusedNamingTheLimit) {
  AttentionParams p;
  p.kv.head_dim = backend_->max_attention_head_dim() + 2;
  p.kv.num_kv_heads = 1;
  p.num_heads = 1;
  backend_->Attention(p);
  const absl::Status status = backend_->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(std::string(status.message()).find("head size"), std::string::npos) << status;
}

INSTANTIATE_TEST_SUITE_P(Devices, PagedAttention, ::testing::ValuesIn(testing::AllDevices()), testing::DeviceName);

}  // namespace
}  // namespace arach
