#include "engine/backend/cuda/cuda_backend.h"

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/elementwise_ops.h"
#include "engine/backend/cuda/paged_attention_plan.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/core/status.h"

namespace arach {
namespace {

constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~CudaBuffer() override { cudaFree(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

// An instantiated CUDA graph, and the FlashInfer state it was captured over (FlashInferAttention::RecordedState).
class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(cudaGraph_t graph, cudaGraphExec_t exec, std::vector<int64_t> attention_state)
      : graph_(graph), exec_(exec), attention_state_(std::move(attention_state)) {}
  ~CudaStepGraph() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  cudaGraphExec_t exec() const { return exec_; }
  const std::vector<int64_t>& attention_state() const { return attention_state_; }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  std::vector<int64_t> attention_state_;
};

class PinnedBuffer final : public DeviceBuffer {
 public:
  PinnedBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~PinnedBuffer() override { cudaFreeHost(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(int device_index, DType element) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || device_index < 0 || device_index >= count) {
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat("cuda: device ", device_index, " is not present (", count,
                                                      " device(s) visible", err != cudaSuccess ? absl::StrCat(", ", cudaGetErrorString(err)) : "",
                                                      ")"));
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend());
  backend->device_ = device_index;
  backend->element_ = element;
  ARACH_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index), "cudaSetDevice");
  cudaDeviceProp prop{};
  ARACH_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device_index), "cudaGetDeviceProperties");
  backend->description_ = absl::StrCat("cuda:", device_index, " (", prop.name, ", sm_", prop.major, prop.minor,
                                       "; ", DTypeName(element), ", cuBLASLt GEMMs, FlashInfer attention for head sizes 64 and 128)");
  ARACH_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&backend->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  ARACH_ASSIGN_OR_RETURN(backend->gemm_, cuda::CublasLtGemm::Create(kGemmWorkspaceBytes));
  ARACH_ASSIGN_OR_RETURN(backend->flashinfer_, cuda::FlashInferAttention::Create(*backend, element, backend->stream_));
  backend->sampler_ = std::make_unique<cuda::DeviceSampler>(*backend, backend->stream_, cuda::DeviceSamplingKernels());
  return backend;
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    sampler_.reset();
    gemm_.reset();
    flashinfer_.reset();
    cudaStreamDestroy(stream_);
  }
}

void CudaBackend::Record(absl::Status status) {
  if (!status.ok() && pending_error_.ok()) pending_error_ = std::move(status);
}

void CudaBackend::CheckLaunch(const char* op) { Record(cuda::CudaStatus(cudaGetLastError(), op)); }

void CudaBackend::CheckRun(const std::string& failure, const char* op) {
  if (!failure.empty()) Record(absl::InternalError(absl::StrCat("cuda ", op, ": ", failure)));
  CheckLaunch(op);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CudaBackend::Allocate(size_t bytes) {
  void* data = nullptr;
  const cudaError_t err = cudaMalloc(&data, std::max<size_t>(bytes, 1));
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the error so later launches do not report it
    return absl::ResourceExhaustedError(absl::StrCat("cuda: cannot allocate ", bytes, " bytes: ", cudaGetErrorString(err)));
  }
  return std::unique_ptr<DeviceBuffer>(new CudaBuffer(data, bytes));
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CudaBackend::AllocateStaging(size_t bytes) {
  void* data = nullptr;
  const cudaError_t err = cudaMallocHost(&data, std::max<size_t>(bytes, 1));
  if (err != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(absl::StrCat("cuda: cannot allocate ", bytes, " bytes of page-locked memory: ",
                                                     cudaGetErrorString(err)));
  }
  return std::unique_ptr<DeviceBuffer>(new PinnedBuffer(data, bytes));
}

void CudaBackend::CopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  // From pageable memory the call returns once the source is staged, so the caller may reuse it.
  if (bytes > 0) Record(cuda::CudaStatus(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_), "copy to device"));
}

void CudaBackend::CopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  Record(cuda::CudaStatus(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_), "copy to host"));
  Record(cuda::CudaStatus(cudaStreamSynchronize(stream_), "copy to host"));
}

void CudaBackend::Fill(void* device_dst, size_t bytes, unsigned char value) {
  if (bytes > 0) Record(cuda::CudaStatus(cudaMemsetAsync(device_dst, value, bytes, stream_), "fill"));
}

void CudaBackend::UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) {
  // Weights: converted on the host, then copied (a one-off at load time).
  std::vector<char> converted(count * DTypeSize(dtype));
  ConvertFromFloat(dtype, host_src, count, converted.data());
  // On the backend's stream (a non-blocking stream does not order after the legacy default stream), and
  // waited for: `converted` is freed on return.
  Record(cuda::CudaStatus(cudaMemcpyAsync(device_dst, converted.data(), converted.size(), cudaMemcpyHostToDevice, stream_), "upload"));
  Record(cuda::CudaStatus(cudaStreamSynchronize(stream_), "upload"));
}

void CudaBackend::DownloadFloat(float* host_dst, const DeviceMatrix& src) {
  const size_t element = DTypeSize(src.dtype);
  const size_t row_bytes = static_cast<size_t>(src.cols) * element;
  std::vector<char> dense(src.dtype == DType::kF32 ? 0 : static_cast<size_t>(src.rows) * row_bytes);
  void* staging = src.dtype == DType::kF32 ? static_cast<void*>(host_dst) : static_cast<void*>(dense.data());
  Record(cuda::CudaStatus(cudaMemcpy2DAsync(staging, row_bytes, src.data, static_cast<size_t>(src.stride) * element, row_bytes,
                                            static_cast<size_t>(src.rows), cudaMemcpyDeviceToHost, stream_),
                          "download"));
  Record(cuda::CudaStatus(cudaStreamSynchronize(stream_), "download"));
  if (src.dtype != DType::kF32) ConvertToFloat(src.dtype, dense.data(), static_cast<size_t>(src.rows * src.cols), host_dst);
}

absl::StatusOr<MemoryBudget> CudaBackend::AvailableMemory() {
  size_t free_bytes = 0, total_bytes = 0;
  ARACH_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return MemoryBudget{free_bytes, absl::StrCat("free device memory (", total_bytes, " bytes in all)")};
}

int CudaBackend::max_attention_head_dim() const { return cuda::kMaxAttentionHeadDim; }

absl::Status CudaBackend::BeginStepGraph() {
  // Thread-local mode: only this thread's CUDA calls are checked against the capture (the engine's step thread
  // owns the backend).
  ARACH_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin step graph");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StepGraph>> CudaBackend::EndStepGraph() {
  cudaGraph_t graph = nullptr;
  ARACH_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream_, &graph), "end step graph");
  cudaGraphExec_t exec = nullptr;
  if (const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0); err != cudaSuccess) {
    cudaGraphDestroy(graph);
    return cuda::CudaStatus(err, "instantiate step graph");
  }
  return std::unique_ptr<StepGraph>(new CudaStepGraph(graph, exec, flashinfer_->RecordedState()));
}

absl::Status CudaBackend::ReplayStepGraph(StepGraph& graph) {
  const auto& step = static_cast<const CudaStepGraph&>(graph);
  if (step.attention_state() != flashinfer_->RecordedState()) {
    return absl::FailedPreconditionError(
        "cuda: the attention plan's buffers or FlashInfer's schedule changed since the step graph was captured");
  }
  ARACH_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(step.exec(), stream_), "replay step graph");
  return absl::OkStatus();
}

absl::Status CudaBackend::SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows,
                                           std::span<int32_t> tokens, std::span<float> logprobs) {
  return sampler_->Sample(logits, rows, tokens, logprobs);
}

absl::Status CudaBackend::ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                                        std::span<TokenLogprob> top) {
  return sampler_->Score(logits, targets, scores, top);
}

absl::Status CudaBackend::SynchronizeImpl() {
  Record(cuda::CudaStatus(cudaStreamSynchronize(stream_), "synchronize"));
  CheckLaunch("synchronize");
  absl::Status status = std::move(pending_error_);
  pending_error_ = absl::OkStatus();
  return status;
}

void CudaBackend::EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
                        const DeviceMatrix& position_table, const DeviceMatrix& out) {
  cuda::LaunchEmbed(ids, positions, table, position_table, out, stream_);
  CheckLaunch("embed");
}

void CudaBackend::LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                            const DeviceMatrix& out) {
  cuda::LaunchNorm(in, weight, bias, eps, /*rms=*/false, out, stream_);
  CheckLaunch("layer norm");
}

void CudaBackend::RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) {
  CheckRun(cuda::RunRmsNorm(in, weight, eps, out, stream_), "rms norm");
}

void CudaBackend::RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) {
  CheckRun(cuda::RunRmsNormHeads(x, heads, head_dim, weight, eps, stream_), "head rms norm");
}

void CudaBackend::LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
                         bool accumulate) {
  Record(gemm_->Linear(in, weight, bias, out, accumulate, stream_));
}

void CudaBackend::LinearActivateImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                                     const DeviceMatrix& out) {
  const std::optional<cuda::GemmEpilogue> epilogue = cuda::GemmEpilogueFor(act);
  if (!epilogue.has_value()) {
    Backend::LinearActivateImpl(in, weight, bias, act, out);
    return;
  }
  Record(gemm_->Linear(in, weight, bias, out, /*accumulate=*/false, stream_, *epilogue));
}

void CudaBackend::RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                       const float* cos_sin) {
  CheckRun(cuda::RunRope(x, heads, head_dim, rotary_dim, positions, cos_sin, stream_), "rope");
}

void CudaBackend::ActivateImpl(Activation act, const DeviceMatrix& x) {
  cuda::LaunchActivate(act, x, stream_);
  CheckLaunch("activation");
}

void CudaBackend::GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) {
  CheckRun(cuda::RunGatedActivate(act, in, out, stream_), "gated activation");
}

void CudaBackend::AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) {
  cuda::LaunchAdd(x, y, stream_);
  CheckLaunch("add");
}

void CudaBackend::WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) {
  cuda::LaunchWriteKv(k, v, slots, kv, stream_);
  CheckLaunch("kv write");
}

absl::Status CudaBackend::PlanAttention(const AttentionBatchLayout& layout) {
  if (!cuda::AttentionRunsOnFlashInfer(layout.head_dim, layout.num_heads, layout.num_kv_heads)) return absl::OkStatus();  // our own kernel needs no plan
  ARACH_ASSIGN_OR_RETURN(cuda::PagedAttentionPlan plan, cuda::BuildPagedAttentionPlan(layout));
  return flashinfer_->Plan(std::move(plan), layout);
}

void CudaBackend::AttentionImpl(const AttentionParams& params) {
  if (!cuda::AttentionRunsOnFlashInfer(params.kv.head_dim, params.num_heads, params.kv.num_kv_heads)) {
    cuda::LaunchAttention(params, stream_);
    CheckLaunch("attention");
    return;
  }
  // Attention over the cache, FlashInfer's: over q as it is, or over each sequence's verbal and hub queries packed
  // as one request (grouped_hub_heads.h).
  const bool grouped = flashinfer_->hub_heads_grouped();
  const AttentionParams attended = grouped ? cuda::GroupedHubView(params, flashinfer_->grouped_q(), flashinfer_->grouped_out()) : params;
  if (grouped) {
    cuda::LaunchPackGroupedHubQueries(params, attended.q.data, stream_);
    CheckLaunch("pack grouped hub queries");
  }
  absl::StatusOr<const float*> lse = flashinfer_->Run(attended);
  if (!lse.ok()) {
    Record(lse.status());
    return;
  }
  CheckLaunch("attention");
  cuda::LaunchHubMerge(params, *lse, grouped ? attended.out.data : nullptr, stream_);  // + the hub, + the diagnostics
  CheckLaunch("hub merge");
}

void CudaBackend::GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) {
  cuda::LaunchGatherRows(src, rows, dst, stream_);
  CheckLaunch("gather rows");
}

void CudaBackend::ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) {
  cuda::LaunchScatterRows(src, rows, dst, accumulate, stream_);
  CheckLaunch("scatter rows");
}

void CudaBackend::FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) {
  cuda::LaunchFillRows(row, out, stream_);
  CheckLaunch("fill rows");
}

void CudaBackend::SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) {
  cuda::LaunchSumRows(src, sum, stream_);
  CheckLaunch("sum rows");
}

}  // namespace arach
