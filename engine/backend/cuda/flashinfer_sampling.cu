// FlashInfer's sampling stages for the GPU's sampler (flashinfer_kernels.h, device_sampling.h): the softmax with a
// temperature per row, the top-k renormalisation (its radix select) and the top-p renormalisation, on float32 rows.
#include <algorithm>
#include <string>

#include "engine/backend/cuda/flashinfer_error_text.cuh"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "flashinfer/sampling.cuh"
#include "flashinfer/topk.cuh"

namespace arach::cuda {
namespace {

// OnlineSoftmax splits the vocabulary into slices of this many tokens for batches of at most 128 rows over at
// least 24576 tokens, keeping one partial result per (row, slice) in the workspace.
constexpr int kSoftmaxSlice = 8192;

}  // namespace

size_t FlashInferSoftmaxWorkspaceBytes(int rows, int vocab) {
  return static_cast<size_t>(std::max(rows, 1)) * ((vocab + kSoftmaxSlice - 1) / kSoftmaxSlice) *
         sizeof(flashinfer::sampling::PartialSoftmaxResult);
}

std::string FlashInferSoftmax(const float* logits, float* probs, int rows, int vocab, const float* temperature,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return LaunchErrorText(flashinfer::sampling::OnlineSoftmax<float>(const_cast<float*>(logits), probs, static_cast<uint32_t>(rows),
                                                           static_cast<uint32_t>(vocab), const_cast<float*>(temperature),
                                                           /*temperature_val=*/1.0f, workspace, workspace_bytes,
                                                           /*enable_pdl=*/false, stream),
                "FlashInfer softmax");
}

size_t FlashInferTopKStateBytes() {
  // One row state per group of CTAs working on a row; there are at most as many groups as multiprocessors.
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();
    sms = 1024;
  }
  return static_cast<size_t>(std::max(sms, 1)) * sizeof(flashinfer::sampling::RadixRowState);
}

std::string FlashInferTopKRenorm(const float* probs, float* out, int rows, int vocab, const int32_t* top_k, void* row_states,
                                 cudaStream_t stream) {
  return LaunchErrorText(flashinfer::sampling::RadixTopKRenormProbMultiCTA<float, int32_t>(
                    const_cast<float*>(probs), out, const_cast<int32_t*>(top_k), static_cast<uint32_t>(rows), /*top_k_val=*/0,
                    static_cast<uint32_t>(vocab), static_cast<flashinfer::sampling::RadixRowState*>(row_states), stream),
                "FlashInfer top-k renormalisation");
}

std::string FlashInferTopPRenorm(const float* probs, float* out, int rows, int vocab, const float* top_p, cudaStream_t stream) {
  return LaunchErrorText(flashinfer::sampling::TopPRenormProb<float>(const_cast<float*>(probs), out, const_cast<float*>(top_p),
                                                            static_cast<uint32_t>(rows), /*top_p_val=*/1.0f,
                                                            static_cast<uint32_t>(vocab), stream),
                "FlashInfer top-p renormalisation");
}

}  // namespace arach::cuda
