// Paged attention over T K/V pages with the optional ARACH hub term (rules in attention_params.h).
//
// One warp owns one (verbal row, query head). When the row's sequence has ARACH on, the same warp also
// computes the paired hub row's query for that head, so verbal and hub queries read each KV page once.
// Keys are visited in chunks of 32: lane k scores key (chunk + k) against the query (held in shared
// memory), the chunk updates a running max / sum (online softmax), then the warp accumulates the values
// with each lane owning the output dims lane, lane + 32, ... The hub key/value starts the running state
// (its logit gets the sequence's offset b), which is the log-sum-exp merge of hub and cache terms.
// Diagnostics (attention_mass set): the logits of position 0 and of the hub are kept, and at the end
// lane 0 adds exp(logit - max) / sum of each to the (sequence, head) sums with an atomic add.
#include <cfloat>

#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"

namespace arach::cuda {
namespace {

constexpr int kAttentionWarpsPerBlock = 4;
constexpr int kMaxHeadDim = kMaxAttentionHeadDim;
constexpr int kMaxDimsPerLane = kMaxHeadDim / 32;

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Running softmax state of one query over the keys seen so far; lane-owned slice of the output.
struct Running {
  float max_logit;
  float sum;
  float acc[kMaxDimsPerLane];
};

struct AttentionArgs {
  AttentionParams p;
  int64_t slot_elems;  // kv_heads * head_dim
};

// Where one warp's work lives: the verbal row, its hub partner and what they may see.
struct WarpTask {
  int head, kv_head, seq;
  int hub_index;   // row of hub_k / hub_v (when kQueries == 2)
  int first;       // attends cached positions [first, limit] (first > 0 under a sliding window)
  int limit;
  int64_t q_rows[2];  // rows of q / out: verbal row, hub row
};

// kQueries: 1 (verbal only) or 2 (verbal + hub, sharing every key and value read).
template <typename T, int kQueries>
__device__ void AttendRow(const AttentionArgs& args, const WarpTask& task, float (*q_shared)[kMaxHeadDim]) {
  const AttentionParams& p = args.p;
  const int head_dim = p.kv.head_dim;
  const int lane = threadIdx.x % 32;
  for (int qi = 0; qi < kQueries; ++qi) {
    const T* q = static_cast<const T*>(p.q.data) + task.q_rows[qi] * p.q.stride + static_cast<int64_t>(task.head) * head_dim;
    for (int d = lane; d < head_dim; d += 32) q_shared[qi][d] = ToFloat(q[d]);
  }
  __syncwarp();

  Running state[kQueries];
  float sink_logit[kQueries], hub_logit[kQueries];  // diagnostics: the logits of position 0 and of the hub
#pragma unroll
  for (int qi = 0; qi < kQueries; ++qi) {
    sink_logit[qi] = -FLT_MAX;
    hub_logit[qi] = -FLT_MAX;
    state[qi].max_logit = -FLT_MAX;
    state[qi].sum = 0.0f;
#pragma unroll
    for (int t = 0; t < kMaxDimsPerLane; ++t) state[qi].acc[t] = 0.0f;
  }
  if (kQueries == 2) {  // the hub term opens the softmax: logit q.hub_k * scale + b, value hub_v
    const int64_t head_offset = static_cast<int64_t>(task.kv_head) * head_dim;
    const T* hub_k = static_cast<const T*>(p.hub_k.data) + task.hub_index * p.hub_k.stride + head_offset;
    const T* hub_v = static_cast<const T*>(p.hub_v.data) + task.hub_index * p.hub_v.stride + head_offset;
#pragma unroll
    for (int qi = 0; qi < kQueries; ++qi) {
      float partial = 0.0f;
      for (int d = lane; d < head_dim; d += 32) partial += q_shared[qi][d] * ToFloat(hub_k[d]);
      state[qi].max_logit = WarpSum(partial) * p.scale + p.hub_logit_offset[task.seq];
      hub_logit[qi] = state[qi].max_logit;
      state[qi].sum = 1.0f;
#pragma unroll
      for (int t = 0; t < kMaxDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < head_dim) state[qi].acc[t] = ToFloat(hub_v[d]);
      }
    }
  }

  const T* k_cache = static_cast<const T*>(p.kv.k);
  const T* v_cache = static_cast<const T*>(p.kv.v);
  const int32_t* blocks = p.block_tables + p.block_table_start[task.seq];
  const int block_size = p.kv.block_size;
  for (int chunk = task.first; chunk <= task.limit; chunk += 32) {
    const int j = chunk + lane;
    const bool valid = j <= task.limit;
    // Element offset of key j's head slice in the cache layer.
    int64_t offset = 0;
    float logits[kQueries];
#pragma unroll
    for (int qi = 0; qi < kQueries; ++qi) logits[qi] = -FLT_MAX;
    if (valid) {
      const int64_t slot = static_cast<int64_t>(blocks[j / block_size]) * block_size + j % block_size;
      offset = slot * args.slot_elems + static_cast<int64_t>(task.kv_head) * head_dim;
      const T* key = k_cache + offset;
      float dot[kQueries] = {};
      for (int d2 = 0; d2 < head_dim / 2; ++d2) {
        const float2 kf = LoadPair(key + 2 * d2);
#pragma unroll
        for (int qi = 0; qi < kQueries; ++qi) dot[qi] += q_shared[qi][2 * d2] * kf.x + q_shared[qi][2 * d2 + 1] * kf.y;
      }
#pragma unroll
      for (int qi = 0; qi < kQueries; ++qi) logits[qi] = dot[qi] * p.scale;
    }
    if (chunk == 0) {  // lane 0 holds position 0 (only when no sliding window hides it)
#pragma unroll
      for (int qi = 0; qi < kQueries; ++qi) sink_logit[qi] = __shfl_sync(0xffffffffu, logits[qi], 0);
    }
    float weights[kQueries];
#pragma unroll
    for (int qi = 0; qi < kQueries; ++qi) {
      Running& r = state[qi];
      const float new_max = fmaxf(r.max_logit, WarpMax(logits[qi]));
      const float correction = __expf(r.max_logit - new_max);
      weights[qi] = valid ? __expf(logits[qi] - new_max) : 0.0f;
      r.sum = r.sum * correction + WarpSum(weights[qi]);
      r.max_logit = new_max;
#pragma unroll
      for (int t = 0; t < kMaxDimsPerLane; ++t) r.acc[t] *= correction;
    }
    const int chunk_keys = min(32, task.limit + 1 - chunk);
    for (int k = 0; k < chunk_keys; ++k) {
      const T* value = v_cache + __shfl_sync(0xffffffffu, offset, k);
      float w[kQueries];
#pragma unroll
      for (int qi = 0; qi < kQueries; ++qi) w[qi] = __shfl_sync(0xffffffffu, weights[qi], k);
#pragma unroll
      for (int t = 0; t < kMaxDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < head_dim) {
          const float v = ToFloat(value[d]);
#pragma unroll
          for (int qi = 0; qi < kQueries; ++qi) state[qi].acc[t] += w[qi] * v;
        }
      }
    }
  }

#pragma unroll
  for (int qi = 0; qi < kQueries; ++qi) {
    T* out = static_cast<T*>(p.out.data) + task.q_rows[qi] * p.out.stride + static_cast<int64_t>(task.head) * head_dim;
    const float inv_sum = 1.0f / state[qi].sum;
#pragma unroll
    for (int t = 0; t < kMaxDimsPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < head_dim) out[d] = FromFloat<T>(state[qi].acc[t] * inv_sum);
    }
    if (p.attention_mass != nullptr && lane == 0) {
      const int sink_kind = qi == 0 ? kVerbalRowsOnSink : kHubRowsOnSink;
      float* mass = p.attention_mass + (static_cast<int64_t>(task.seq) * kAttentionMassKinds + sink_kind) * p.num_heads + task.head;
      if (task.first == 0) atomicAdd(mass, __expf(sink_logit[qi] - state[qi].max_logit) * inv_sum);
      if (kQueries == 2) atomicAdd(mass + p.num_heads, __expf(hub_logit[qi] - state[qi].max_logit) * inv_sum);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kAttentionWarpsPerBlock * 32) PagedAttentionKernel(AttentionArgs args) {
  const AttentionParams& p = args.p;
  const int warp = threadIdx.x / 32;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kAttentionWarpsPerBlock + warp;
  if (item >= static_cast<int64_t>(p.num_verbal_rows) * p.num_heads) return;
  const int row = static_cast<int>(item / p.num_heads);

  WarpTask task;
  task.head = static_cast<int>(item % p.num_heads);
  task.kv_head = task.head / (p.num_heads / p.kv.num_kv_heads);
  task.seq = FindSegment(p.query_start, p.num_seqs, row);
  task.limit = p.positions[row];
  task.first = p.sliding_window > 0 ? max(0, task.limit - p.sliding_window + 1) : 0;
  const bool has_hub = SequenceHasHub(p, task.seq);
  task.hub_index = has_hub ? p.hub_start[task.seq] + (row - p.query_start[task.seq]) : 0;
  task.q_rows[0] = row;
  task.q_rows[1] = static_cast<int64_t>(p.num_verbal_rows) + task.hub_index;

  // q of this warp's queries in float32: [kAttentionWarpsPerBlock][2][kMaxHeadDim].
  __shared__ float q_shared[kAttentionWarpsPerBlock][2][kMaxHeadDim];
  if (has_hub) {
    AttendRow<T, 2>(args, task, q_shared[warp]);
  } else {
    AttendRow<T, 1>(args, task, q_shared[warp]);
  }
}

}  // namespace

void LaunchAttention(const AttentionParams& params, cudaStream_t stream) {
  const int64_t items = static_cast<int64_t>(params.num_verbal_rows) * params.num_heads;
  if (items == 0) return;
  AttentionArgs args{params, static_cast<int64_t>(params.kv.num_kv_heads) * params.kv.head_dim};
  ARACH_DISPATCH_HALF(params.kv.dtype, T, {
    ARACH_LAUNCH(PagedAttentionKernel<T>, Blocks(items, kAttentionWarpsPerBlock), kAttentionWarpsPerBlock * 32, 0, stream)(args);
  })
}

}  // namespace arach::cuda
