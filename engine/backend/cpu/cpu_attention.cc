// Paged attention on CPU. For every sequence and KV head, the cached keys/values of its context are
// gathered from their pages once; the query vectors of that head group (verbal rows, and hub rows when
// ARACH is on) are processed in tiles: scores by GEMM (or dot loops for tiny tiles), causal limit per
// row, the hub term joined into the same softmax, then the weighted sum of values.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/backend/cpu/cpu_backend.h"

namespace arach {
namespace {

constexpr int kQueryTile = 64;     // query vectors per GEMM tile
constexpr int kGemmMinRows = 8;    // below this, dot-product loops beat a BLAS call

// One query vector of a tile: where it comes from and what it may see.
struct QueryRef {
  const float* q;   // [head_dim]
  float* out;       // [head_dim]
  int limit;        // attends cached positions [0, limit]
  const float* hub_k;  // [head_dim] or null
  const float* hub_v;  // [head_dim] or null
};

inline float Dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void CpuBackend::Attention(const AttentionParams& p) {
  const int head_dim = p.kv.head_dim;
  const int kv_heads = p.kv.num_kv_heads;
  const int group = p.num_heads / kv_heads;
  const int block_size = p.kv.block_size;
  const int64_t slot_elems = static_cast<int64_t>(kv_heads) * head_dim;  // one cache slot
  const float* k_cache = static_cast<const float*>(p.kv.k);
  const float* v_cache = static_cast<const float*>(p.kv.v);
  const float neg_inf = -std::numeric_limits<float>::infinity();

  std::vector<QueryRef> queries;
  std::vector<float> q_tile, o_tile, hub_weight;
  for (int s = 0; s < p.num_seqs; ++s) {
    const int q0 = p.query_start[s];
    const int n = p.query_start[s + 1] - q0;
    if (n == 0) continue;
    int context = 0;
    for (int i = 0; i < n; ++i) context = std::max(context, p.positions[q0 + i] + 1);
    const int32_t* blocks = p.block_tables + p.block_table_start[s];
    const bool has_hub = p.num_hub_rows > 0 && p.hub_start[s + 1] > p.hub_start[s];
    const int hub0 = has_hub ? p.hub_start[s] : 0;
    const float hub_offset = has_hub ? p.hub_logit_offset[s] : 0.0f;

    keys_.resize(static_cast<size_t>(context) * head_dim);
    values_.resize(static_cast<size_t>(context) * head_dim);
    for (int g = 0; g < kv_heads; ++g) {
      // Gather this head's context: keys_/values_ are [context, head_dim].
      for (int j = 0; j < context; ++j) {
        const int64_t slot = static_cast<int64_t>(blocks[j / block_size]) * block_size + j % block_size;
        std::memcpy(&keys_[static_cast<size_t>(j) * head_dim], k_cache + slot * slot_elems + g * head_dim, head_dim * sizeof(float));
        std::memcpy(&values_[static_cast<size_t>(j) * head_dim], v_cache + slot * slot_elems + g * head_dim, head_dim * sizeof(float));
      }
      // The query vectors of this head group: verbal rows, then hub rows.
      queries.clear();
      for (int stream = 0; stream < (has_hub ? 2 : 1); ++stream) {
        for (int i = 0; i < n; ++i) {
          const int64_t row = stream == 0 ? q0 + i : static_cast<int64_t>(p.num_verbal_rows) + hub0 + i;
          for (int h = g * group; h < (g + 1) * group; ++h) {
            QueryRef ref;
            ref.q = p.q.As<float>() + row * p.q.stride + static_cast<int64_t>(h) * head_dim;
            ref.out = p.out.As<float>() + row * p.out.stride + static_cast<int64_t>(h) * head_dim;
            ref.limit = p.positions[q0 + i];
            ref.hub_k = has_hub ? p.hub_k.As<float>() + (hub0 + i) * p.hub_k.stride + g * head_dim : nullptr;
            ref.hub_v = has_hub ? p.hub_v.As<float>() + (hub0 + i) * p.hub_v.stride + g * head_dim : nullptr;
            queries.push_back(ref);
          }
        }
      }

      for (size_t t0 = 0; t0 < queries.size(); t0 += kQueryTile) {
        const int tile = static_cast<int>(std::min<size_t>(kQueryTile, queries.size() - t0));
        int span = 0;  // keys any query of the tile can see
        for (int t = 0; t < tile; ++t) span = std::max(span, queries[t0 + t].limit + 1);
        scores_.assign(static_cast<size_t>(tile) * span, 0.0f);
        const bool use_gemm = tile >= kGemmMinRows;
        if (use_gemm) {
          q_tile.resize(static_cast<size_t>(tile) * head_dim);
          for (int t = 0; t < tile; ++t) std::memcpy(&q_tile[static_cast<size_t>(t) * head_dim], queries[t0 + t].q, head_dim * sizeof(float));
          // scores (tile x span) = q_tile (tile x hd) . keys^T (hd x span)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tile, span, head_dim, p.scale, q_tile.data(), head_dim,
                      keys_.data(), head_dim, 0.0f, scores_.data(), span);
        }
        o_tile.assign(static_cast<size_t>(tile) * head_dim, 0.0f);
        hub_weight.assign(tile, 0.0f);
        for (int t = 0; t < tile; ++t) {
          const QueryRef& ref = queries[t0 + t];
          float* row = &scores_[static_cast<size_t>(t) * span];
          const int visible = ref.limit + 1;
          if (!use_gemm) {
            for (int j = 0; j < visible; ++j) row[j] = p.scale * Dot(ref.q, &keys_[static_cast<size_t>(j) * head_dim], head_dim);
          }
          float max_score = neg_inf;
          for (int j = 0; j < visible; ++j) max_score = std::max(max_score, row[j]);
          float hub_score = neg_inf;
          if (ref.hub_k != nullptr) {
            hub_score = p.scale * Dot(ref.q, ref.hub_k, head_dim) + hub_offset;
            max_score = std::max(max_score, hub_score);
          }
          float sum = 0.0f;
          for (int j = 0; j < visible; ++j) {
            row[j] = std::exp(row[j] - max_score);
            sum += row[j];
          }
          for (int j = visible; j < span; ++j) row[j] = 0.0f;
          float hub_p = ref.hub_k != nullptr ? std::exp(hub_score - max_score) : 0.0f;
          sum += hub_p;
          const float inv_sum = 1.0f / sum;
          for (int j = 0; j < visible; ++j) row[j] *= inv_sum;
          hub_weight[t] = hub_p * inv_sum;
          if (!use_gemm) {
            float* o = &o_tile[static_cast<size_t>(t) * head_dim];
            for (int j = 0; j < visible; ++j) {
              const float w = row[j];
              const float* v = &values_[static_cast<size_t>(j) * head_dim];
              for (int c = 0; c < head_dim; ++c) o[c] += w * v[c];
            }
          }
        }
        if (use_gemm) {
          // o_tile (tile x hd) = scores (tile x span) . values (span x hd)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tile, head_dim, span, 1.0f, scores_.data(), span,
                      values_.data(), head_dim, 0.0f, o_tile.data(), head_dim);
        }
        for (int t = 0; t < tile; ++t) {
          const QueryRef& ref = queries[t0 + t];
          const float* o = &o_tile[static_cast<size_t>(t) * head_dim];
          if (ref.hub_v != nullptr) {
            for (int c = 0; c < head_dim; ++c) ref.out[c] = o[c] + hub_weight[t] * ref.hub_v[c];
          } else {
            std::memcpy(ref.out, o, head_dim * sizeof(float));
          }
        }
      }
    }
  }
}

}  // namespace arach
