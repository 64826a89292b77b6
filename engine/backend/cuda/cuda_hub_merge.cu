// The ARACH hub term, merged into attention over the cache by log-sum-exp (rules in attention_params.h).
//
// FlashInfer's kernels attend each q row over its cached positions only and return the output o and the
// log-sum-exp in base 2, lse = log2(sum_j 2^(s_j log2 e)) with s_j = q.k_j * scale. The hub adds one more key
// and value per row: h = q.hub_k * scale + b (b: the sequence's offset). With everything in log2 units,
// H = h log2 e and T = log2(2^lse + 2^H):
//   out = o 2^(lse - T) + hub_v 2^(H - T),
// the softmax over cache and hub together. The attention-mass diagnostics (when asked) are 2^(S0 - T) for
// position 0 (S0 = q.k_0 * scale * log2 e, 0 where a sliding window hides it) and 2^(H - T) for the hub.
//
// Decode steps whose plan groups the hub heads (grouped_hub_heads.h) read o and lse from the packed layout FlashInfer
// wrote them in and write every row of the output (the rows without a hub as they are).
//
// One warp per (row, head): lanes hold pairs of dims (2 lane + 64 t), so any even head size up to 256 works.
#include <cfloat>

#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/grouped_hub_heads.h"

namespace arach::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr float kLog2e = 1.4426950408889634f;

// q . x over one head (head_dim dims), summed over the warp; every lane gets it.
template <typename T>
__device__ __forceinline__ float HeadDot(const T* q, const T* x, int head_dim) {
  const int lane = threadIdx.x % 32;
  float partial = 0.0f;
  for (int d = 2 * lane; d < head_dim; d += 64) {
    const float2 a = LoadPair(q + d);
    const float2 b = LoadPair(x + d);
    partial += a.x * b.x + a.y * b.y;
  }
  return WarpSum(partial);
}

struct MergeArgs {
  AttentionParams p;
  const float* lse;         // base 2: [rows, num_heads], or [num_seqs, 2 * num_heads] with grouped_out
  const void* grouped_out;  // null (the outputs are p.out), or [num_seqs, 2 * num_heads, head_dim] (grouped_hub_heads.h)
};

template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) HubMergeKernel(MergeArgs args) {
  const AttentionParams& p = args.p;
  const int warp = threadIdx.x / 32;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  const int rows = p.num_verbal_rows + p.num_hub_rows;
  if (item >= static_cast<int64_t>(rows) * p.num_heads) return;
  const int row = static_cast<int>(item / p.num_heads), head = static_cast<int>(item % p.num_heads);

  // The row's sequence, its hub (if any) and the verbal row whose position it shares.
  const bool hub_row = row >= p.num_verbal_rows;
  int seq, hub_index, verbal_row;
  if (hub_row) {
    hub_index = row - p.num_verbal_rows;
    seq = FindSegment(p.hub_start, p.num_seqs, hub_index);
    verbal_row = p.query_start[seq] + (hub_index - p.hub_start[seq]);
  } else {
    verbal_row = row;
    seq = FindSegment(p.query_start, p.num_seqs, row);
    hub_index = p.num_hub_rows > 0 ? p.hub_start[seq] + (row - p.query_start[seq]) : 0;
  }
  const bool has_hub = hub_row || SequenceHasHub(p, seq);
  const bool grouped = args.grouped_out != nullptr;
  if (!has_hub && !grouped && p.attention_mass == nullptr) return;

  const int head_dim = p.kv.head_dim;
  const int kv_head = head / (p.num_heads / p.kv.num_kv_heads);
  const int64_t head_offset = static_cast<int64_t>(head) * head_dim;
  const int64_t kv_offset = static_cast<int64_t>(kv_head) * head_dim;
  const T* q = static_cast<const T*>(p.q.data) + row * p.q.stride + head_offset;
  T* out = static_cast<T*>(p.out.data) + row * p.out.stride + head_offset;
  // Where attention over the cache left this row's output and log-sum-exp.
  const T* cache_out = out;
  float cache_lse;
  if (grouped) {
    const int64_t packed = static_cast<int64_t>(seq) * 2 * p.num_heads + GroupedHubHead(head, p.num_heads / p.kv.num_kv_heads, hub_row);
    cache_out = static_cast<const T*>(args.grouped_out) + packed * head_dim;
    cache_lse = args.lse[packed];
  } else {
    cache_lse = args.lse[static_cast<int64_t>(row) * p.num_heads + head];
  }
  float hub_logit = -FLT_MAX, total = cache_lse;  // log2 units
  if (has_hub || grouped) {
    float cache_weight = 1.0f, hub_weight = 0.0f;
    const T* hub_v = nullptr;
    if (has_hub) {
      const T* hub_k = static_cast<const T*>(p.hub_k.data) + hub_index * p.hub_k.stride + kv_offset;
      hub_logit = (HeadDot(q, hub_k, head_dim) * p.scale + p.hub_logit_offset[seq]) * kLog2e;
      const float top = fmaxf(cache_lse, hub_logit);
      total = top + log2f(exp2f(cache_lse - top) + exp2f(hub_logit - top));
      cache_weight = exp2f(cache_lse - total);
      hub_weight = exp2f(hub_logit - total);
      hub_v = static_cast<const T*>(p.hub_v.data) + hub_index * p.hub_v.stride + kv_offset;
    }
    const int lane = threadIdx.x % 32;
    for (int d = 2 * lane; d < head_dim; d += 64) {
      const float2 o = LoadPair(cache_out + d);
      const float2 v = hub_v != nullptr ? LoadPair(hub_v + d) : make_float2(0.0f, 0.0f);
      StorePair(out + d, o.x * cache_weight + v.x * hub_weight, o.y * cache_weight + v.y * hub_weight);
    }
  }
  if (p.attention_mass == nullptr) return;
  const int position = p.positions[verbal_row];
  const bool sink_visible = p.sliding_window <= 0 || position - p.sliding_window + 1 <= 0;
  float sink_probability = 0.0f;
  if (sink_visible) {  // position 0: the first slot of the sequence's first block
    const int64_t slot = static_cast<int64_t>(p.block_tables[p.block_table_start[seq]]) * p.kv.block_size;
    const T* k0 = static_cast<const T*>(p.kv.k) + slot * p.kv.num_kv_heads * head_dim + kv_offset;
    sink_probability = exp2f(HeadDot(q, k0, head_dim) * p.scale * kLog2e - total);
  }
  if (threadIdx.x % 32 != 0) return;
  float* mass = p.attention_mass + static_cast<int64_t>(seq) * kAttentionMassKinds * p.num_heads + head;
  if (sink_visible) atomicAdd(mass + (hub_row ? kHubRowsOnSink : kVerbalRowsOnSink) * p.num_heads, sink_probability);
  if (has_hub) atomicAdd(mass + (hub_row ? kHubRowsOnHub : kVerbalRowsOnHub) * p.num_heads, exp2f(hub_logit - total));
}

// One thread per pair of dims of one head of a sequence's verbal or hub query, copied to its packed place (zeros
// for the hub half of a sequence without a hub row).
template <typename T>
__global__ void PackGroupedHubQueriesKernel(AttentionParams p, T* packed) {
  const int head_dim = p.kv.head_dim, pairs = head_dim / 2;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= static_cast<int64_t>(p.num_seqs) * 2 * p.num_heads * pairs) return;
  const int d = 2 * static_cast<int>(item % pairs);
  const int head = static_cast<int>(item / pairs % p.num_heads);
  const bool hub_row = item / pairs / p.num_heads % 2 == 1;
  const int seq = static_cast<int>(item / pairs / p.num_heads / 2);
  const int group = p.num_heads / p.kv.num_kv_heads;
  T* dst = packed + (static_cast<int64_t>(seq) * 2 * p.num_heads + GroupedHubHead(head, group, hub_row)) * head_dim + d;
  int row = p.query_start[seq];
  if (hub_row) row = SequenceHasHub(p, seq) ? p.num_verbal_rows + p.hub_start[seq] : -1;
  if (row < 0) {
    StorePair(dst, 0.0f, 0.0f);
    return;
  }
  const T* src = static_cast<const T*>(p.q.data) + row * p.q.stride + static_cast<int64_t>(head) * head_dim + d;
  dst[0] = src[0];
  dst[1] = src[1];
}

}  // namespace

void LaunchHubMerge(const AttentionParams& params, const float* lse, const void* grouped_out, cudaStream_t stream) {
  const int64_t items = static_cast<int64_t>(params.num_verbal_rows + params.num_hub_rows) * params.num_heads;
  if (items == 0 || (grouped_out == nullptr && params.num_hub_rows == 0 && params.attention_mass == nullptr)) return;
  ARACH_DISPATCH_HALF(params.q.dtype, T, {
    ARACH_LAUNCH(HubMergeKernel<T>, Blocks(items, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream)(MergeArgs{params, lse, grouped_out});
  })
}

void LaunchPackGroupedHubQueries(const AttentionParams& params, void* packed_q, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t items = static_cast<int64_t>(params.num_seqs) * 2 * params.num_heads * (params.kv.head_dim / 2);
  if (items == 0) return;
  ARACH_DISPATCH_HALF(params.q.dtype, T, {
    ARACH_LAUNCH(PackGroupedHubQueriesKernel<T>, Blocks(items, kThreads), kThreads, 0, stream)(params, static_cast<T*>(packed_q));
  })
}

}  // namespace arach::cuda
