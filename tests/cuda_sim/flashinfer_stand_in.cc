#include "tests/cuda_sim/flashinfer_stand_in.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace arach::testing {
namespace {

// Element `index` of a bf16 or f16 array.
float HalfAt(DType dtype, const void* base, int64_t index) {
  float v;
  ConvertToFloat(dtype, static_cast<const uint16_t*>(base) + index, 1, &v);
  return v;
}

}  // namespace

void FlashInferStandIn(const cuda::PagedAttentionPlan& plan, const AttentionParams& params, int window_left, float* lse) {
  const int hd = params.kv.head_dim, page = params.kv.block_size;
  const int group = params.num_heads / params.kv.num_kv_heads;
  const int64_t slot_elems = static_cast<int64_t>(params.kv.num_kv_heads) * hd;
  const double log2e = 1.4426950408889634;
  for (int r = 0; r < plan.num_requests(); ++r) {
    const int64_t kv_len = plan.KvLength(r, page);
    const int64_t qo_len = plan.qo_indptr[r + 1] - plan.qo_indptr[r];
    for (int64_t i = 0; i < qo_len; ++i) {
      const int64_t row = plan.qo_indptr[r] + i;
      const int64_t last = kv_len - qo_len + i;
      const int64_t first = window_left >= 0 ? std::max<int64_t>(0, last - window_left) : 0;
      for (int h = 0; h < params.num_heads; ++h) {
        const int64_t q_base = row * params.q.stride + static_cast<int64_t>(h) * hd;
        const int64_t kv_head = static_cast<int64_t>(h / group) * hd;
        std::vector<double> scores;  // log2 units
        std::vector<int64_t> slots;
        for (int64_t j = first; j <= last; ++j) {
          const int64_t slot = static_cast<int64_t>(plan.kv_indices[plan.kv_indptr[r] + j / page]) * page + j % page;
          double dot = 0.0;
          for (int d = 0; d < hd; ++d) dot += HalfAt(params.q.dtype, params.q.data, q_base + d) *
                                              HalfAt(params.kv.dtype, params.kv.k, slot * slot_elems + kv_head + d);
          scores.push_back(dot * params.scale * log2e);
          slots.push_back(slot);
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (double& s : scores) sum += (s = std::exp2(s - top));
        lse[row * params.num_heads + h] = static_cast<float>(top + std::log2(sum));
        uint16_t* out = static_cast<uint16_t*>(params.out.data) + row * params.out.stride + static_cast<int64_t>(h) * hd;
        for (int d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (size_t j = 0; j < slots.size(); ++j) acc += scores[j] * HalfAt(params.kv.dtype, params.kv.v, slots[j] * slot_elems + kv_head + d);
          const float value = static_cast<float>(acc / sum);
          ConvertFromFloat(params.out.dtype, &value, 1, &out[d]);
        }
      }
    }
  }
}

}  // namespace arach::testing
