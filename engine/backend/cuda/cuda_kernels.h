// Launchers of the CUDA backend's kernels (cuda_*.cu). Activations and the KV cache are bf16; arithmetic
// is float32. Every launcher queues work on `stream` and returns; errors surface at the next check
// (CudaBackend checks cudaGetLastError after each op and at Synchronize).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/attention_params.h"
#include "engine/backend/cuda/logit_processing_args.h"
#include "engine/backend/device_matrix.h"
#include "engine/core/activation.h"

namespace arach::cuda {

// out[i] = table[ids[i]] (+ positions_table[positions[i]]); all bf16.
void LaunchEmbed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
                 const DeviceMatrix& out, cudaStream_t stream);
// LayerNorm (bias may be empty) or RMSNorm (rms = true) of every row.
void LaunchNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps, bool rms,
                const DeviceMatrix& out, cudaStream_t stream);
// In place: RMSNorm of each head of every row (one warp per head), weight [head_dim].
void LaunchRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps, cudaStream_t stream);
// Rotate-half RoPE in place on `heads` heads of every row; cos_sin as Backend::Rope.
void LaunchRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* cos_sin,
                cudaStream_t stream);
void LaunchActivate(Activation act, const DeviceMatrix& x, cudaStream_t stream);
void LaunchGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream);
void LaunchAdd(const DeviceMatrix& x, const DeviceMatrix& y, cudaStream_t stream);
void LaunchWriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv, cudaStream_t stream);
void LaunchGatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, cudaStream_t stream);
void LaunchScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate, cudaStream_t stream);
void LaunchFillRows(const DeviceMatrix& row, const DeviceMatrix& out, cudaStream_t stream);
// sum ([1, cols] float32) = the sum of src's rows (Backend::SumRows).
void LaunchSumRows(const DeviceMatrix& src, const DeviceMatrix& sum, cudaStream_t stream);
// Paged attention with the optional ARACH hub term (see attention_params.h).
// The largest head size the kernel takes (even sizes only).
constexpr int kMaxAttentionHeadDim = 256;
void LaunchAttention(const AttentionParams& params, cudaStream_t stream);
// After attention over the cache alone has written its outputs and `lse` (float32, log2 of each row's softmax
// denominator in log2 units, as FlashInfer returns it): merges each hub row's and each hub-bearing verbal row's
// hub key/value in by log-sum-exp, and adds the attention-mass diagnostics when params.attention_mass is set
// (cuda_hub_merge.cu). With `grouped_out` null the outputs are params.out itself and lse is [rows, num_heads];
// a step with neither hub rows nor diagnostics needs nothing. With `grouped_out` (a step whose plan groups the hub
// heads, grouped_hub_heads.h) the outputs and lse are in the packed layout, and every row of params.out is
// written from there.
void LaunchHubMerge(const AttentionParams& params, const float* lse, const void* grouped_out, cudaStream_t stream);
// packed_q ([num_seqs, 2 * num_heads * head_dim], params.q's type) = each sequence's verbal and hub queries in
// the packed layout of grouped_hub_heads.h, for a decode step (one verbal row per sequence).
void LaunchPackGroupedHubQueries(const AttentionParams& params, void* packed_q, cudaStream_t stream);

// The sampler's logit processors: `processed` = float32 `logits` ([args.rows, args.vocab]) after them
// (cuda_logit_processing.cu). `processed` may be `logits`.
void LaunchProcessLogits(const LogitProcessingArgs& args, const float* logits, float* processed, cudaStream_t stream);

}  // namespace arach::cuda
