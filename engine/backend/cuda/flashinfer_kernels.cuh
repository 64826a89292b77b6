// The bodies of flashinfer_kernels.h's entry points, instantiated per head size by flashinfer_*_{64,128}.cu.
// Only those translation units include FlashInfer's headers.
#pragma once

#include <exception>
#include <type_traits>

#include "engine/backend/cuda/flashinfer_error_text.cuh"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "flashinfer/attention/decode.cuh"
#include "flashinfer/attention/default_decode_params.cuh"
#include "flashinfer/attention/default_prefill_params.cuh"
#include "flashinfer/attention/prefill.cuh"
#include "flashinfer/attention/scheduler.cuh"
#include "flashinfer/attention/variants.cuh"

namespace arach::cuda::flashinfer_glue {

using flashinfer::GetPtrFromBaseOffset;
// The element type of DType kElement (kBF16 or kF16).
template <DType kElement>
using Element = std::conditional_t<kElement == DType::kF16, half, nv_bfloat16>;
// Softmax attention, the sliding-window mask compiled in (window_left < 0 disables it), no soft cap, no ALiBi.
using Variant = flashinfer::DefaultAttention</*use_custom_mask=*/false, /*use_sliding_window=*/true,
                                             /*use_logits_soft_cap=*/false, /*use_alibi=*/false>;
template <typename E>
using DecodeParams = flashinfer::BatchDecodeParams<E, E, E, int32_t>;
template <typename E>
using PrefillParams = flashinfer::BatchPrefillPagedParams<E, E, E, int32_t>;
constexpr auto kNoRope = flashinfer::PosEncodingMode::kNone;

// Our pages as FlashInfer's paged_kv_t (NHD: [blocks, block_size, kv_heads, head_dim]).
template <typename E>
flashinfer::paged_kv_t<E, int32_t> PagedKv(const FlashInferBatch& batch, const AttentionParams& p) {
  return flashinfer::paged_kv_t<E, int32_t>(
      static_cast<uint32_t>(batch.num_kv_heads), static_cast<uint32_t>(batch.page_size), static_cast<uint32_t>(p.kv.head_dim),
      static_cast<uint32_t>(batch.num_requests), flashinfer::QKVLayout::kNHD, static_cast<E*>(p.kv.k),
      static_cast<E*>(p.kv.v), batch.kv_indices, batch.kv_indptr, batch.kv_last_page_len);
}

template <DType kElement, int kHeadDim>
std::string PlanDecode(const FlashInferWorkspace& w, const FlashInferBatch& batch, std::vector<int64_t>* plan_info,
                       cudaStream_t stream) {
  using E = Element<kElement>;
  try {
    flashinfer::DecodePlanInfo info;
    cudaError_t status = cudaSuccess;
    DISPATCH_GQA_GROUP_SIZE(static_cast<uint32_t>(batch.num_qo_heads / batch.num_kv_heads), kGroupSize, {
      auto estimate = flashinfer::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<kGroupSize, kHeadDim, kNoRope,
                                                                                       Variant, DecodeParams<E>>;
      status = flashinfer::DecodePlan<kHeadDim, kNoRope, Variant, DecodeParams<E>>(
          w.float_buffer, w.float_bytes, w.int_buffer, w.pinned_int_buffer, w.int_bytes, info,
          const_cast<int32_t*>(batch.kv_indptr_host), static_cast<uint32_t>(batch.num_requests),
          static_cast<uint32_t>(batch.num_qo_heads), static_cast<uint32_t>(batch.page_size),
          /*enable_cuda_graph=*/batch.for_step_graph, stream, estimate);
    });
    *plan_info = info.ToVector();
    return CudaErrorText(status, "FlashInfer decode plan");
  } catch (const std::exception& e) {
    return std::string("FlashInfer decode plan: ") + e.what();
  }
}

template <DType kElement, int kHeadDim>
std::string RunDecode(const FlashInferWorkspace& w, const FlashInferBatch& batch, const std::vector<int64_t>& plan_info,
                      const AttentionParams& p, float* lse, cudaStream_t stream) {
  using E = Element<kElement>;
  try {
    flashinfer::DecodePlanInfo info;
    info.FromVector(plan_info);
    DecodeParams<E> params(static_cast<E*>(p.q.data), /*q_rope_offset=*/nullptr, PagedKv<E>(batch, p),
                        static_cast<E*>(p.out.data), lse, /*maybe_alibi_slopes=*/nullptr,
                        static_cast<uint32_t>(p.num_heads), static_cast<int32_t>(p.q.stride), kHeadDim, FlashInferWindowLeft(p),
                        /*logits_soft_cap=*/0.0f, p.scale, /*rope_scale=*/1.0f, /*rope_theta=*/1e4f);
    params.request_indices = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.request_indices_offset);
    params.kv_tile_indices = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.kv_tile_indices_offset);
    params.o_indptr = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.o_indptr_offset);
    params.kv_chunk_size_ptr = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.kv_chunk_size_ptr_offset);
    params.padded_batch_size = static_cast<uint32_t>(info.padded_batch_size);
    E* tmp_v = nullptr;
    float* tmp_s = nullptr;
    if (info.split_kv) {
      tmp_v = GetPtrFromBaseOffset<E>(w.float_buffer, info.v_offset);
      tmp_s = GetPtrFromBaseOffset<float>(w.float_buffer, info.s_offset);
      // A graph-mode plan launches a fixed padded_batch_size of blocks whatever the step's work; the mask stops
      // the blocks past it (their request and tile indices are left over from other steps).
      if (info.enable_cuda_graph) params.block_valid_mask = GetPtrFromBaseOffset<bool>(w.int_buffer, info.block_valid_mask_offset);
    }
    return CudaErrorText(flashinfer::BatchDecodeWithPagedKVCacheDispatched<kHeadDim, kNoRope, Variant>(
                         params, tmp_v, tmp_s, /*enable_pdl=*/false, stream),
                     "FlashInfer decode");
  } catch (const std::exception& e) {
    return std::string("FlashInfer decode: ") + e.what();
  }
}

template <DType kElement, int kHeadDim>
std::string PlanPrefill(const FlashInferWorkspace& w, const FlashInferBatch& batch, std::vector<int64_t>* plan_info,
                        cudaStream_t stream) {
  using E = Element<kElement>;
  try {
    flashinfer::PrefillPlanInfo info;
    const cudaError_t status = flashinfer::PrefillPlan<int32_t>(
        w.float_buffer, w.float_bytes, w.int_buffer, w.pinned_int_buffer, w.int_bytes, info,
        const_cast<int32_t*>(batch.qo_indptr_host), const_cast<int32_t*>(batch.kv_indptr_host),
        static_cast<uint32_t>(batch.total_rows), static_cast<uint32_t>(batch.num_requests),
        static_cast<uint32_t>(batch.num_qo_heads), static_cast<uint32_t>(batch.num_kv_heads), kHeadDim, kHeadDim,
        static_cast<uint32_t>(batch.page_size), /*enable_cuda_graph=*/batch.for_step_graph, sizeof(E), /*window_left=*/-1,
        /*fixed_split_size=*/-1, /*disable_split_kv=*/false, /*num_colocated_ctas=*/0, stream);
    *plan_info = info.ToVector();
    return CudaErrorText(status, "FlashInfer prefill plan");
  } catch (const std::exception& e) {
    return std::string("FlashInfer prefill plan: ") + e.what();
  }
}

template <DType kElement, int kHeadDim>
std::string RunPrefill(const FlashInferWorkspace& w, const FlashInferBatch& batch, const std::vector<int64_t>& plan_info,
                       const AttentionParams& p, float* lse, cudaStream_t stream) {
  using E = Element<kElement>;
  try {
    flashinfer::PrefillPlanInfo info;
    info.FromVector(plan_info);
    PrefillParams<E> params(static_cast<E*>(p.q.data), PagedKv<E>(batch, p), /*maybe_custom_mask=*/nullptr, batch.qo_indptr,
                         /*maybe_mask_indptr=*/nullptr, /*maybe_q_rope_offset=*/nullptr, static_cast<E*>(p.out.data), lse,
                         /*maybe_alibi_slopes=*/nullptr, static_cast<uint32_t>(p.num_heads), static_cast<int32_t>(p.q.stride),
                         kHeadDim, FlashInferWindowLeft(p), /*logits_soft_cap=*/0.0f, p.scale, /*rope_scale=*/1.0f, /*rope_theta=*/1e4f);
    params.request_indices = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.request_indices_offset);
    params.qo_tile_indices = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.qo_tile_indices_offset);
    params.kv_tile_indices = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.kv_tile_indices_offset);
    params.o_indptr = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.o_indptr_offset);
    params.kv_chunk_size_ptr = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.kv_chunk_size_ptr_offset);
    params.padded_batch_size = static_cast<uint32_t>(info.padded_batch_size);
    params.max_total_num_rows = static_cast<uint32_t>(info.total_num_rows);
    E* tmp_v = nullptr;
    float* tmp_s = nullptr;
    if (info.split_kv) {
      params.merge_indptr = GetPtrFromBaseOffset<int32_t>(w.int_buffer, info.merge_indptr_offset);
      tmp_v = GetPtrFromBaseOffset<E>(w.float_buffer, info.v_offset);
      tmp_s = GetPtrFromBaseOffset<float>(w.float_buffer, info.s_offset);
      if (info.enable_cuda_graph) params.block_valid_mask = GetPtrFromBaseOffset<bool>(w.int_buffer, info.block_valid_mask_offset);
    }
    // A graph-mode plan's row count is read on the device (the merge of split-KV partial outputs).
    if (info.enable_cuda_graph) params.total_num_rows = GetPtrFromBaseOffset<uint32_t>(w.int_buffer, info.total_num_rows_offset);
    cudaError_t status = cudaSuccess;
    DISPATCH_CTA_TILE_Q(info.cta_tile_q, kCtaTileQ, {
      status = flashinfer::BatchPrefillWithPagedKVCacheDispatched<kCtaTileQ, kHeadDim, kHeadDim, kNoRope,
                                                                 /*USE_FP16_QK_REDUCTION=*/false,
                                                                 flashinfer::MaskMode::kCausal, Variant>(
          params, tmp_v, tmp_s, /*enable_pdl=*/false, stream);
    });
    return CudaErrorText(status, "FlashInfer prefill");
  } catch (const std::exception& e) {
    return std::string("FlashInfer prefill: ") + e.what();
  }
}

}  // namespace arach::cuda::flashinfer_glue

namespace arach::cuda {

template <DType kElement, int kHeadDim>
std::string PlanFlashInferDecode(const FlashInferWorkspace& w, const FlashInferBatch& b, std::vector<int64_t>* info,
                                 cudaStream_t s) {
  return flashinfer_glue::PlanDecode<kElement, kHeadDim>(w, b, info, s);
}
template <DType kElement, int kHeadDim>
std::string RunFlashInferDecode(const FlashInferWorkspace& w, const FlashInferBatch& b, const std::vector<int64_t>& info,
                                const AttentionParams& p, float* lse, cudaStream_t s) {
  return flashinfer_glue::RunDecode<kElement, kHeadDim>(w, b, info, p, lse, s);
}
template <DType kElement, int kHeadDim>
std::string PlanFlashInferPrefill(const FlashInferWorkspace& w, const FlashInferBatch& b, std::vector<int64_t>* info,
                                  cudaStream_t s) {
  return flashinfer_glue::PlanPrefill<kElement, kHeadDim>(w, b, info, s);
}
template <DType kElement, int kHeadDim>
std::string RunFlashInferPrefill(const FlashInferWorkspace& w, const FlashInferBatch& b, const std::vector<int64_t>& info,
                                 const AttentionParams& p, float* lse, cudaStream_t s) {
  return flashinfer_glue::RunPrefill<kElement, kHeadDim>(w, b, info, p, lse, s);
}

}  // namespace arach::cuda

// Instantiates flashinfer_kernels.h's entry points of one kind (Decode or Prefill) for one element type (kBF16 or
// kF16) and head size.
#define ARACH_FLASHINFER_ENTRY_POINTS(kind, element, head_dim)                                                     \
  template std::string arach::cuda::PlanFlashInfer##kind<arach::DType::element, head_dim>(                        \
      const arach::cuda::FlashInferWorkspace&, const arach::cuda::FlashInferBatch&, std::vector<int64_t>*,         \
      cudaStream_t);                                                                                               \
  template std::string arach::cuda::RunFlashInfer##kind<arach::DType::element, head_dim>(                         \
      const arach::cuda::FlashInferWorkspace&, const arach::cuda::FlashInferBatch&, const std::vector<int64_t>&,   \
      const arach::AttentionParams&, float*, cudaStream_t);
