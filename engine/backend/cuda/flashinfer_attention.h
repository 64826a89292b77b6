// Paged attention over the cache through FlashInfer, for the CUDA backend: a step is planned once (our rows
// mapped onto FlashInfer's requests, paged_attention_plan.h; the arrays copied to the device in one transfer
// from page-locked memory, StagedUpload; FlashInfer's decode or prefill schedule built), then every layer runs on that plan
// and leaves its output and each row's log-sum-exp for the hub merge (cuda_hub_merge.cu).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/attention_params.h"
#include "engine/backend/backend.h"
#include "engine/backend/staged_upload.h"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "engine/backend/cuda/paged_attention_plan.h"

namespace arach::cuda {

class FlashInferAttention {
 public:
  // Kernels for q, K/V and outputs of `element` (kBF16 or kF16), queued on `stream`, the plan's arrays uploaded
  // through `backend` (the CUDA backend that owns this, on the same stream).
  static absl::StatusOr<std::unique_ptr<FlashInferAttention>> Create(Backend& backend, DType element, cudaStream_t stream);
  ~FlashInferAttention();
  FlashInferAttention(const FlashInferAttention&) = delete;
  FlashInferAttention& operator=(const FlashInferAttention&) = delete;

  // Plans one step (the layout must satisfy AttentionRunsOnFlashInfer): the decode kernel when every request has
  // one row and FlashInferDecodeTakesGroup, the prefill kernels otherwise.
  absl::Status Plan(PagedAttentionPlan plan, const AttentionBatchLayout& layout);
  // Whether the planned step groups the hub heads (grouped_hub_heads.h): its layers then run on
  // GroupedHubView(params, grouped_q(), grouped_out()), buffers sized by Plan for the step.
  bool hub_heads_grouped() const { return planned_ && plan_.hub_heads_grouped; }
  void* grouped_q() const { return grouped_q_; }
  void* grouped_out() const { return grouped_out_; }
  // Attention of every q row over its cached positions (no hub): writes params.out and returns the log-sum-exp,
  // [rows, num_heads] float32 in device memory, valid until the next Run.
  absl::StatusOr<const float*> Run(const AttentionParams& params);
  // What a step graph recorded over the current plan depends on: the device buffers its kernels point into (the
  // plan's arrays, moved when `arrays_` reallocates; the log-sum-exp and the packed queries and outputs, moved when
  // `epoch_` changes) and FlashInfer's schedule (its grid sizes,
  // split-KV choice and workspace offsets, copied into the recorded kernels' arguments). A recorded graph is
  // replayed only over a plan with the same state.
  std::vector<int64_t> RecordedState() const;

 private:
  FlashInferAttention(Backend& backend, DType element, cudaStream_t stream)
      : element_(element), stream_(stream), arrays_(backend) {}
  // Grows a device buffer to `bytes`.
  absl::Status Reserve(size_t bytes, void** device, size_t* capacity);

  DType element_;
  cudaStream_t stream_;
  FlashInferWorkspace workspace_;
  // The plan's qo_indptr | kv_indptr | kv_last_page_len | kv_indices on the device (the one whose length changes
  // between decode steps of the same batch goes last, so the others keep their addresses).
  StagedUpload arrays_;
  void* lse_ = nullptr;            // device: [rows, query heads] float32
  size_t lse_capacity_ = 0;
  void* grouped_q_ = nullptr;      // device: [num_seqs, 2 * num_heads * head_dim] of the element type
  size_t grouped_q_capacity_ = 0;
  void* grouped_out_ = nullptr;    // device: as grouped_q_
  size_t grouped_out_capacity_ = 0;
  cudaEvent_t staged_ = nullptr;   // the last plan's copies from page-locked memory (ours, FlashInfer's) are done
  PagedAttentionPlan plan_;  // the step's plan: FlashInfer's planning reads its host indptrs
  FlashInferBatch batch_;
  std::vector<int64_t> plan_info_;
  bool decode_ = true;  // FlashInfer's decode kernel, else its prefill kernels
  int head_dim_ = 0;
  bool planned_ = false;
  uint64_t epoch_ = 0;
};

}  // namespace arach::cuda
