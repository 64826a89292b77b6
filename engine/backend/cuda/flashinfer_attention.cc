#include "engine/backend/cuda/flashinfer_attention.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/core/status.h"

namespace arach::cuda {
namespace {

// Split-KV partial outputs: FlashInfer's prefill kernels, which also take the decode steps of groups its decode
// kernel lacks, keep num_qo_heads x padded tiles x cta_tile_q x head_dim floats; a 256-sequence decode step graph of
// Qwen2.5-7B's shape with the hub packed (56 query heads over 4, head size 128) needs 220 MB, past FlashInfer's
// Python default of 128 MiB. 8 MiB of schedule, its default.
constexpr size_t kFloatWorkspaceBytes = size_t{256} << 20;
constexpr size_t kIntWorkspaceBytes = size_t{8} << 20;

// Calls `call(element, head_dim)` with both as compile-time constants (std::integral_constant), for the
// instantiations flashinfer_kernels.h declares.
template <typename Call>
std::string WithKernelConstants(DType element, int head_dim, Call&& call) {
  using F16 = std::integral_constant<DType, DType::kF16>;
  using BF16 = std::integral_constant<DType, DType::kBF16>;
  using D64 = std::integral_constant<int, 64>;
  using D128 = std::integral_constant<int, 128>;
  if (element == DType::kF16) return head_dim == 64 ? call(F16{}, D64{}) : call(F16{}, D128{});
  return head_dim == 64 ? call(BF16{}, D64{}) : call(BF16{}, D128{});
}

absl::Status FromMessage(const std::string& message) {
  return message.empty() ? absl::OkStatus() : absl::InternalError(absl::StrCat("cuda attention: ", message));
}

}  // namespace

absl::StatusOr<std::unique_ptr<FlashInferAttention>> FlashInferAttention::Create(Backend& backend, DType element,
                                                                                cudaStream_t stream) {
  if (element != DType::kBF16 && element != DType::kF16) {
    return absl::InvalidArgumentError(absl::StrCat("cuda attention: no FlashInfer kernels for ", DTypeName(element)));
  }
  std::unique_ptr<FlashInferAttention> a(new FlashInferAttention(backend, element, stream));
  FlashInferWorkspace& w = a->workspace_;
  w.float_bytes = kFloatWorkspaceBytes;
  w.int_bytes = kIntWorkspaceBytes;
  ARACH_CUDA_RETURN_IF_ERROR(cudaMalloc(&w.float_buffer, w.float_bytes), "FlashInfer float workspace");
  ARACH_CUDA_RETURN_IF_ERROR(cudaMalloc(&w.int_buffer, w.int_bytes), "FlashInfer int workspace");
  ARACH_CUDA_RETURN_IF_ERROR(cudaMallocHost(&w.pinned_int_buffer, w.int_bytes), "FlashInfer page-locked workspace");
  ARACH_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&a->staged_, cudaEventDisableTiming), "cudaEventCreate");
  return a;
}

FlashInferAttention::~FlashInferAttention() {
  if (staged_ != nullptr) cudaEventSynchronize(staged_);
  cudaFree(workspace_.float_buffer);
  cudaFree(workspace_.int_buffer);
  cudaFreeHost(workspace_.pinned_int_buffer);
  cudaFree(lse_);
  cudaFree(grouped_q_);
  cudaFree(grouped_out_);
  if (staged_ != nullptr) cudaEventDestroy(staged_);
}

absl::Status FlashInferAttention::Reserve(size_t bytes, void** device, size_t* capacity) {
  if (bytes <= *capacity) return absl::OkStatus();
  const size_t grown = std::max(bytes, *capacity * 2);
  ARACH_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "attention scratch");  // the old buffers may be in use
  cudaFree(*device);
  *device = nullptr;
  *capacity = 0;
  ARACH_CUDA_RETURN_IF_ERROR(cudaMalloc(device, grown), "attention scratch");
  *capacity = grown;
  ++epoch_;
  return absl::OkStatus();
}

absl::Status FlashInferAttention::Plan(PagedAttentionPlan plan, const AttentionBatchLayout& layout) {
  planned_ = false;
  if (!AttentionRunsOnFlashInfer(layout.head_dim, layout.num_heads, layout.num_kv_heads)) {
    return absl::InternalError(absl::StrCat("cuda attention: FlashInfer is not built for head size ", layout.head_dim, " with ",
                                                   layout.num_heads, " query heads over ", layout.num_kv_heads, " KV heads"));
  }
  // The page-locked buffers are rewritten below: the previous step's copies from them must have finished.
  ARACH_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(staged_), "attention plan");
  const size_t requests = static_cast<size_t>(plan.num_requests());
  using U = StagedUpload;
  ARACH_ASSIGN_OR_RETURN(const std::vector<const void*> device,
                         arrays_.Upload({U::Of(plan.qo_indptr), U::Of(plan.kv_indptr), U::Of(plan.kv_last_page_len),
                                         U::Of(plan.kv_indices)}));
  auto ints = [&](int i) { return static_cast<int32_t*>(const_cast<void*>(device[i])); };
  batch_.qo_indptr = ints(0);
  batch_.kv_indptr = ints(1);
  batch_.kv_last_page_len = ints(2);
  batch_.kv_indices = ints(3);
  plan_ = std::move(plan);
  batch_.qo_indptr_host = plan_.qo_indptr.data();
  batch_.kv_indptr_host = plan_.kv_indptr.data();
  batch_.num_requests = static_cast<int>(requests);
  batch_.total_rows = plan_.qo_indptr.back();
  batch_.num_qo_heads = plan_.hub_heads_grouped ? 2 * layout.num_heads : layout.num_heads;
  batch_.num_kv_heads = layout.num_kv_heads;
  batch_.page_size = layout.block_size;
  ARACH_RETURN_IF_ERROR(Reserve(static_cast<size_t>(batch_.total_rows) * batch_.num_qo_heads * sizeof(float), &lse_, &lse_capacity_));
  if (plan_.hub_heads_grouped) {
    const size_t packed_bytes = static_cast<size_t>(batch_.total_rows) * batch_.num_qo_heads * layout.head_dim * DTypeSize(element_);
    ARACH_RETURN_IF_ERROR(Reserve(packed_bytes, &grouped_q_, &grouped_q_capacity_));
    ARACH_RETURN_IF_ERROR(Reserve(packed_bytes, &grouped_out_, &grouped_out_capacity_));
  }
  const bool one_row_each = plan_.max_query_rows <= 1;
  decode_ = one_row_each && FlashInferDecodeTakesGroup(batch_.num_qo_heads / batch_.num_kv_heads);
  batch_.for_step_graph = layout.for_step_graph;
  if (layout.for_step_graph && !one_row_each) {
    return absl::InternalError("cuda attention: a step graph was asked for a step with more than one row per request");
  }
  head_dim_ = layout.head_dim;
  std::string error;
  if (requests > 0) {
    error = WithKernelConstants(element_, head_dim_, [&](auto element, auto head_dim) {
      return decode_ ? PlanFlashInferDecode<element.value, head_dim.value>(workspace_, batch_, &plan_info_, stream_)
                     : PlanFlashInferPrefill<element.value, head_dim.value>(workspace_, batch_, &plan_info_, stream_);
    });
  }
  ARACH_CUDA_RETURN_IF_ERROR(cudaEventRecord(staged_, stream_), "attention plan");
  ARACH_RETURN_IF_ERROR(FromMessage(error));
  planned_ = true;
  return absl::OkStatus();
}

std::vector<int64_t> FlashInferAttention::RecordedState() const {
  std::vector<int64_t> state = {static_cast<int64_t>(epoch_), static_cast<int64_t>(arrays_.device_allocations()),
                                planned_, decode_, head_dim_, hub_heads_grouped(), batch_.num_qo_heads};
  state.insert(state.end(), plan_info_.begin(), plan_info_.end());
  return state;
}

absl::StatusOr<const float*> FlashInferAttention::Run(const AttentionParams& params) {
  if (!planned_ || params.kv.head_dim != head_dim_ || params.q.dtype != element_ || params.kv.dtype != element_ || params.num_heads != batch_.num_qo_heads ||
      params.num_verbal_rows + params.num_hub_rows != batch_.total_rows) {
    return absl::InternalError("cuda attention: the step was not planned for this call (Backend::PlanAttention)");
  }
  if (params.out.stride != params.out.cols) {
    return absl::InternalError("cuda attention: FlashInfer writes a dense output");
  }
  float* lse = static_cast<float*>(lse_);
  if (batch_.num_requests == 0) return lse;
  const std::string error = WithKernelConstants(element_, head_dim_, [&](auto element, auto head_dim) {
    return decode_ ? RunFlashInferDecode<element.value, head_dim.value>(workspace_, batch_, plan_info_, params, lse, stream_)
                   : RunFlashInferPrefill<element.value, head_dim.value>(workspace_, batch_, plan_info_, params, lse, stream_);
  });
  ARACH_RETURN_IF_ERROR(FromMessage(error));
  return static_cast<const float*>(lse);
}

}  // namespace arach::cuda
