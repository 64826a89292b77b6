// Our entry points into FlashInfer (v0.6.9, header-only): its sampling stages (flashinfer_sampling.cu, at the end),
// its norms, RoPE and gated activations (flashinfer_elementwise.cu, at the end; elementwise_ops.h says which shapes
// go there) and its batched paged-KV attention, one explicit instantiation per element type, head size and kind
// (flashinfer_{decode,prefill}_{bf16,f16}_{64,128}.cu), so that each heavy kernel family compiles in its own
// translation unit. This header is plain C++: FlashInfer's own
// headers are seen only by those .cu files; its plan is carried between Plan and Run as the vector its PlanInfo
// types convert to.
//
// What we ask of FlashInfer: q, K/V and output all of the backend's 16-bit type (kElement: kBF16 or kF16), K/V
// pages in our layout ([blocks, block_size, kv_heads, head_dim], NHD), the default softmax attention with the
// sliding-window mask compiled in (window_left -1 = none: one kernel family serves both kinds of layer), no RoPE
// inside the kernel (ours is applied before), and the log-sum-exp of every row and head (base 2) for the hub
// merge.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/attention_params.h"
#include "engine/backend/device_matrix.h"
#include "engine/core/activation.h"
#include "engine/core/dtype.h"

namespace arach::cuda {

// FlashInfer's window_left for a layer: the positions a row sees before its own, or -1 for no window.
inline int32_t FlashInferWindowLeft(const AttentionParams& p) { return p.sliding_window > 0 ? p.sliding_window - 1 : -1; }

// Scratch FlashInfer's plans and split-KV runs use (sizes in flashinfer_attention.cc).
struct FlashInferWorkspace {
  void* float_buffer = nullptr;  // device: partial outputs of split-KV runs
  size_t float_bytes = 0;
  void* int_buffer = nullptr;  // device: the schedule
  void* pinned_int_buffer = nullptr;  // page-locked host mirror of int_buffer (the schedule is built there)
  size_t int_bytes = 0;
};

// One step's batch in FlashInfer's terms (paged_attention_plan.h), on the device and, for planning, on the host.
struct FlashInferBatch {
  const int32_t* qo_indptr_host = nullptr;  // [num_requests + 1]
  const int32_t* kv_indptr_host = nullptr;  // [num_requests + 1]
  int32_t* qo_indptr = nullptr;             // device copies of the plan's arrays
  int32_t* kv_indptr = nullptr;
  int32_t* kv_indices = nullptr;
  int32_t* kv_last_page_len = nullptr;
  int num_requests = 0;
  int total_rows = 0;
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int page_size = 0;
  // Plan for a CUDA graph (enable_cuda_graph): the launch shapes and the schedule's layout depend only on the
  // number of requests and rows (one row per request: decode steps, on either kernel).
  bool for_step_graph = false;
};

// Decode: every request has one query row, and the query heads per KV head are a group FlashInferDecodeTakesGroup
// (paged_attention_plan.h). Plan once per step; Run once per layer. Errors (a CUDA error or FlashInfer's own checks)
// come back as a message; "" = success.
template <DType kElement, int kHeadDim>
std::string PlanFlashInferDecode(const FlashInferWorkspace& workspace, const FlashInferBatch& batch,
                                 std::vector<int64_t>* plan_info, cudaStream_t stream);
template <DType kElement, int kHeadDim>
std::string RunFlashInferDecode(const FlashInferWorkspace& workspace, const FlashInferBatch& batch,
                                const std::vector<int64_t>& plan_info, const AttentionParams& params, float* lse,
                                cudaStream_t stream);
// Prefill (any rows per request, causal within each request's last rows, any group; also decode steps of other
// groups, for CUDA graphs too).
template <DType kElement, int kHeadDim>
std::string PlanFlashInferPrefill(const FlashInferWorkspace& workspace, const FlashInferBatch& batch,
                                  std::vector<int64_t>* plan_info, cudaStream_t stream);
template <DType kElement, int kHeadDim>
std::string RunFlashInferPrefill(const FlashInferWorkspace& workspace, const FlashInferBatch& batch,
                                 const std::vector<int64_t>& plan_info, const AttentionParams& params, float* lse,
                                 cudaStream_t stream);

// Sampling stages (flashinfer_sampling.cu) on float32 rows of `vocab` values, for the GPU's sampler
// (device_sampling.h). Errors come back as a message; "" = success.
//
// probs = softmax(logits / temperature[row]); `workspace` holds FlashInferSoftmaxWorkspaceBytes(rows, vocab).
size_t FlashInferSoftmaxWorkspaceBytes(int rows, int vocab);
std::string FlashInferSoftmax(const float* logits, float* probs, int rows, int vocab, const float* temperature,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream);
// out = probs restricted to each row's top_k[row] largest (those tied with the k-th kept too; top_k >= vocab keeps
// all), renormalised. row_states: FlashInferTopKStateBytes() of device memory, zeroed before the first call.
size_t FlashInferTopKStateBytes();
std::string FlashInferTopKRenorm(const float* probs, float* out, int rows, int vocab, const int32_t* top_k, void* row_states,
                                 cudaStream_t stream);
// out = probs restricted to the largest ones whose sum reaches top_p[row] (those tied with the last one kept too;
// top_p >= 1 keeps all), renormalised.
std::string FlashInferTopPRenorm(const float* probs, float* out, int rows, int vocab, const float* top_p, cudaStream_t stream);

// Element-wise stages (flashinfer_elementwise.cu) on matrices of the backend's 16-bit type, for the shapes
// elementwise_ops.h hands them (FlashInferTakes*). Errors come back as a message; "" = success.
//
// out = in / rms(in) * weight (norm::RMSNorm).
std::string FlashInferRmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out,
                              cudaStream_t stream);
// In place, each head of each row of x: x[h] / rms(x[h]) * weight (norm::QKRMSNorm).
std::string FlashInferRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps,
                                   cudaStream_t stream);
// In place, rotate-half RoPE of the first rotary_dim dims of each head from the cos/sin table (as Backend::Rope;
// BatchQKApplyRotaryPosIdsCosSinCache).
std::string FlashInferRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                           const float* cos_sin, cudaStream_t stream);
// out = act(in[:, :I]) * in[:, I:] (activation::act_and_mul_kernel with our act).
std::string FlashInferGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream);

}  // namespace arach::cuda
