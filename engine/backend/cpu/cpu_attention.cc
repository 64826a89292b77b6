// Paged attention on CPU, parallel over (sequence, KV head). For each pair, the query vectors of that
// head group (verbal rows, and hub rows when ARACH is on) are processed in tiles: few queries (decode)
// read keys and values straight from their pages; many queries (prefill) gather the context once and
// use GEMMs. Each query's causal limit is applied per row and the hub term joins the same softmax.
// The cache holds float32, f16 or bf16 keys and values (--kv_cache_dtype): half-width ones are widened to float32
// as they are read (in registers for decode, into the gathered copy for prefill); the arithmetic is float32.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/cpu/half_elements.h"

namespace arach {
namespace {

constexpr int kQueryTile = 64;   // query vectors per GEMM tile
constexpr int kGemmMinRows = 8;  // below this, direct loops over the pages beat gathering + BLAS

// One query vector: where it comes from and what it may see.
struct QueryRef {
  const float* q;      // [head_dim]
  float* out;          // [head_dim]
  int first;           // attends cached positions [first, limit] (first > 0 with a sliding window)
  int limit;
  const float* hub_k;  // [head_dim] or null
  const float* hub_v;  // [head_dim] or null
  // Diagnostics or null: [0] += p(-> position 0), [mass_stride] += p(-> own hub) (AttentionMassKind).
  float* mass;
};

// Adds one query row's probabilities on the sink and on its hub to its diagnostics slots.
inline void AddMass(const QueryRef& ref, int mass_stride, float sink_p, float hub_p) {
  if (ref.mass == nullptr) return;
  if (ref.first == 0) ref.mass[0] += sink_p;  // position 0 is outside a sliding window that starts later
  ref.mass[mass_stride] += hub_p;
}

using cpu::BFloat16Bits;
using cpu::HalfBits;
using cpu::Widen;

// a . b with b float32 or half-width (widened per element; the loop vectorises either way).
template <typename T>
inline float Dot(const float* a, const T* b, int n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += a[i] * Widen(b[i]);
  return sum;
}

// Where position j of one sequence's head `g` lives in a cache layer of elements T (float, HalfBits, BFloat16Bits).
template <typename T>
struct PageReader {
  const T* cache;
  const int32_t* blocks;
  int block_size;
  int64_t slot_elems;  // kv_heads * head_dim
  int64_t head_offset;  // g * head_dim
  const T* At(int j) const {
    const int64_t slot = static_cast<int64_t>(blocks[j / block_size]) * block_size + j % block_size;
    return cache + slot * slot_elems + head_offset;
  }
};

// dst[0, n) = src[0, n) as float32.
template <typename T>
inline void WidenInto(const T* src, int n, float* dst) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int i = 0; i < n; ++i) dst[i] = Widen(src[i]);
  }
}

// Turns `scores` (visible logits) plus an optional hub logit into probabilities; returns the hub weight.
float Softmax(float* scores, int visible, bool has_hub, float hub_score) {
  float max_score = has_hub ? hub_score : -std::numeric_limits<float>::infinity();
  for (int j = 0; j < visible; ++j) max_score = std::max(max_score, scores[j]);
  float sum = 0.0f;
  for (int j = 0; j < visible; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float hub_p = has_hub ? std::exp(hub_score - max_score) : 0.0f;
  sum += hub_p;
  const float inv_sum = 1.0f / sum;
  for (int j = 0; j < visible; ++j) scores[j] *= inv_sum;
  return hub_p * inv_sum;
}

// The first cached position a query at `position` attends (its sliding window's start, else 0).
int FirstVisible(const AttentionParams& p, int position) {
  return p.sliding_window > 0 ? std::max(0, position - p.sliding_window + 1) : 0;
}

struct Scratch {
  std::vector<float> keys, values, scores, q_tile, o_tile, hub_weight;
  std::vector<QueryRef> queries;
};

// Queries few enough to read the pages directly.
template <typename T>
void AttendDirect(const AttentionParams& p, const std::vector<QueryRef>& queries, const PageReader<T>& keys,
                  const PageReader<T>& values, float hub_offset, Scratch& scratch) {
  const int head_dim = p.kv.head_dim;
  for (const QueryRef& ref : queries) {
    const int visible = ref.limit - ref.first + 1;
    scratch.scores.resize(visible);
    float* scores = scratch.scores.data();
    for (int j = 0; j < visible; ++j) scores[j] = p.scale * Dot(ref.q, keys.At(ref.first + j), head_dim);
    const bool has_hub = ref.hub_k != nullptr;
    const float hub_score = has_hub ? p.scale * Dot(ref.q, ref.hub_k, head_dim) + hub_offset : 0.0f;
    const float hub_weight = Softmax(scores, visible, has_hub, hub_score);
    AddMass(ref, p.num_heads, scores[0], hub_weight);
    float* o = ref.out;
    for (int c = 0; c < head_dim; ++c) o[c] = has_hub ? hub_weight * ref.hub_v[c] : 0.0f;
    for (int j = 0; j < visible; ++j) {
      const float w = scores[j];
      const T* v = values.At(ref.first + j);
#pragma omp simd
      for (int c = 0; c < head_dim; ++c) o[c] += w * Widen(v[c]);
    }
  }
}

// Many queries: gather the positions [lo, context) once (as float32), then scores and outputs by GEMM per tile
// of queries.
template <typename T>
void AttendGathered(const AttentionParams& p, const std::vector<QueryRef>& queries, int lo, int context,
                    const PageReader<T>& keys, const PageReader<T>& values, float hub_offset, Scratch& s) {
  const int head_dim = p.kv.head_dim;
  const int width = context - lo;
  s.keys.resize(static_cast<size_t>(width) * head_dim);   // [context - lo, head_dim]
  s.values.resize(static_cast<size_t>(width) * head_dim); // [context - lo, head_dim]
  for (int j = 0; j < width; ++j) {
    WidenInto(keys.At(lo + j), head_dim, &s.keys[static_cast<size_t>(j) * head_dim]);
    WidenInto(values.At(lo + j), head_dim, &s.values[static_cast<size_t>(j) * head_dim]);
  }
  for (size_t t0 = 0; t0 < queries.size(); t0 += kQueryTile) {
    const int tile = static_cast<int>(std::min<size_t>(kQueryTile, queries.size() - t0));
    int span = 0;  // gathered keys (from lo) any query of the tile can see
    for (int t = 0; t < tile; ++t) span = std::max(span, queries[t0 + t].limit + 1 - lo);
    s.q_tile.resize(static_cast<size_t>(tile) * head_dim);
    for (int t = 0; t < tile; ++t) std::memcpy(&s.q_tile[static_cast<size_t>(t) * head_dim], queries[t0 + t].q, head_dim * sizeof(float));
    s.scores.resize(static_cast<size_t>(tile) * span);
    // scores (tile x span) = q_tile (tile x hd) . keys^T (hd x span)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tile, span, head_dim, p.scale, s.q_tile.data(), head_dim,
                s.keys.data(), head_dim, 0.0f, s.scores.data(), span);
    s.hub_weight.assign(tile, 0.0f);
    for (int t = 0; t < tile; ++t) {
      const QueryRef& ref = queries[t0 + t];
      float* row = &s.scores[static_cast<size_t>(t) * span];
      const int begin = ref.first - lo, end = ref.limit + 1 - lo;  // the visible columns
      const bool has_hub = ref.hub_k != nullptr;
      const float hub_score = has_hub ? p.scale * Dot(ref.q, ref.hub_k, head_dim) + hub_offset : 0.0f;
      s.hub_weight[t] = Softmax(row + begin, end - begin, has_hub, hub_score);
      AddMass(ref, p.num_heads, row[0], s.hub_weight[t]);  // row[0] is position 0 whenever ref.first == 0 (then lo == 0)
      std::fill(row, row + begin, 0.0f);
      std::fill(row + end, row + span, 0.0f);
    }
    s.o_tile.resize(static_cast<size_t>(tile) * head_dim);
    // o_tile (tile x hd) = scores (tile x span) . values (span x hd)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tile, head_dim, span, 1.0f, s.scores.data(), span,
                s.values.data(), head_dim, 0.0f, s.o_tile.data(), head_dim);
    for (int t = 0; t < tile; ++t) {
      const QueryRef& ref = queries[t0 + t];
      const float* o = &s.o_tile[static_cast<size_t>(t) * head_dim];
      for (int c = 0; c < head_dim; ++c) ref.out[c] = o[c] + (ref.hub_v != nullptr ? s.hub_weight[t] * ref.hub_v[c] : 0.0f);
    }
  }
}

}  // namespace

void CpuBackend::AttentionImpl(const AttentionParams& p) {
  const int head_dim = p.kv.head_dim;
  const int kv_heads = p.kv.num_kv_heads;
  const int group = p.num_heads / kv_heads;
  static_assert(sizeof(Scratch) > 0);
  std::vector<Scratch> scratch(static_cast<size_t>(threads()));

  team_.ForEach(static_cast<int64_t>(p.num_seqs) * kv_heads, [&](int64_t item, int thread) {
    const int s = static_cast<int>(item / kv_heads);
    const int g = static_cast<int>(item % kv_heads);
    const int q0 = p.query_start[s];
    const int n = p.query_start[s + 1] - q0;
    if (n == 0) return;
    Scratch& local = scratch[thread];
    int context = 0, lo = std::numeric_limits<int>::max();  // the positions any query of the sequence sees: [lo, context)
    for (int i = 0; i < n; ++i) {
      context = std::max(context, p.positions[q0 + i] + 1);
      lo = std::min(lo, FirstVisible(p, p.positions[q0 + i]));
    }
    const int32_t* blocks = p.block_tables + p.block_table_start[s];
    const int64_t slot_elems = static_cast<int64_t>(kv_heads) * head_dim;
    const bool has_hub = p.num_hub_rows > 0 && p.hub_start[s + 1] > p.hub_start[s];
    const int hub0 = has_hub ? p.hub_start[s] : 0;
    const float hub_offset = has_hub ? p.hub_logit_offset[s] : 0.0f;

    // The query vectors of this head group: verbal rows, then hub rows.
    std::vector<QueryRef>& queries = local.queries;
    queries.clear();
    for (int stream = 0; stream < (has_hub ? 2 : 1); ++stream) {
      for (int i = 0; i < n; ++i) {
        const int64_t row = stream == 0 ? q0 + i : static_cast<int64_t>(p.num_verbal_rows) + hub0 + i;
        for (int h = g * group; h < (g + 1) * group; ++h) {
          QueryRef ref;
          ref.q = p.q.As<float>() + row * p.q.stride + static_cast<int64_t>(h) * head_dim;
          ref.out = p.out.As<float>() + row * p.out.stride + static_cast<int64_t>(h) * head_dim;
          ref.limit = p.positions[q0 + i];
          ref.first = FirstVisible(p, ref.limit);
          ref.hub_k = has_hub ? p.hub_k.As<float>() + (hub0 + i) * p.hub_k.stride + g * head_dim : nullptr;
          ref.hub_v = has_hub ? p.hub_v.As<float>() + (hub0 + i) * p.hub_v.stride + g * head_dim : nullptr;
          // Only this (sequence, KV head) item touches these slots: no other thread adds to them.
          ref.mass = p.attention_mass == nullptr
                         ? nullptr
                         : p.attention_mass + (static_cast<int64_t>(s) * kAttentionMassKinds +
                                               (stream == 0 ? kVerbalRowsOnSink : kHubRowsOnSink)) * p.num_heads + h;
          queries.push_back(ref);
        }
      }
    }
    auto attend = [&](auto element) {
      using T = decltype(element);
      const PageReader<T> keys{static_cast<const T*>(p.kv.k), blocks, p.kv.block_size, slot_elems, static_cast<int64_t>(g) * head_dim};
      const PageReader<T> values{static_cast<const T*>(p.kv.v), blocks, p.kv.block_size, slot_elems, static_cast<int64_t>(g) * head_dim};
      if (static_cast<int>(queries.size()) < kGemmMinRows) {
        AttendDirect(p, queries, keys, values, hub_offset, local);
      } else {
        AttendGathered(p, queries, lo, context, keys, values, hub_offset, local);
      }
    };
    if (p.kv.dtype == DType::kBF16) {
      attend(BFloat16Bits{});
    } else if (p.kv.dtype == DType::kF16) {
      attend(HalfBits{});
    } else {
      attend(0.0f);
    }
  });
}

}  // namespace arach
