#include "tests/cuda_sim/simulated_cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/elementwise_ops.h"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "engine/backend/cuda/gemm_epilogue.h"
#include "engine/backend/cuda/device_sampling.h"
#include "engine/backend/cuda/paged_attention_plan.h"
#include "tests/cuda_sim/flashinfer_stand_in.h"
#include "tests/cuda_sim/host_elements.h"

namespace arach::testing {
namespace {

constexpr size_t kSimulatedMemoryBytes = size_t{1} << 30;

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes), data_(std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64)) {}
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  size_t size() const override { return bytes_; }

 private:
  size_t bytes_;
  void* data_;
};

// cuBLASLt as CudaBackend configures it: float32 products and sums of the 16-bit inputs, the bias added in float32,
// then the epilogue's activation, the result rounded once to the output's type.
void Gemm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
          bool accumulate, std::optional<Activation> epilogue) {
  const std::vector<float> x = RowsAsFloat(in);      // [m, k]
  const std::vector<float> w = RowsAsFloat(weight);  // [n, k]
  const int64_t k_size = in.cols;
  for (int64_t m = 0; m < in.rows; ++m) {
    for (int64_t n = 0; n < weight.rows; ++n) {
      float sum = 0.0f;
      for (int64_t k = 0; k < k_size; ++k) sum += x[m * k_size + k] * w[n * k_size + k];
      if (bias.data != nullptr) sum += ElementAt(bias, 0, n);
      if (accumulate) sum += ElementAt(out, m, n);
      if (epilogue.has_value()) sum = FloatActivation(*epilogue, sum);
      SetElement(out, m, n, sum);
    }
  }
}

struct RecordedOps final : StepGraph {
  std::vector<std::function<void()>> ops;
};

class SimulatedCudaBackend final : public Backend {
 public:
  explicit SimulatedCudaBackend(DType element)
      : element_(element), sampler_(*this, /*stream=*/nullptr, cuda::DeviceSamplingKernels()) {}
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string Describe() const override { return absl::StrCat("cuda kernels on the SIMT simulator (", DTypeName(element_), ")"); }
  DType activation_dtype() const override { return element_; }

  // As on a GPU, what a CUDA stream capture refuses (cudaMalloc, copies to or from pageable host memory, waiting
  // for the stream) fails while a step graph is recorded; a memset is recorded like a kernel.
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override {
    if (recording_ != nullptr) return RefusedWhileRecording("allocate");
    if (bytes > kSimulatedMemoryBytes) {
      return absl::ResourceExhaustedError(absl::StrCat("simulated cuda: cannot allocate ", bytes, " bytes"));
    }
    return std::unique_ptr<DeviceBuffer>(new HostBuffer(bytes));
  }
  void CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    if (recording_ != nullptr) return RecordError(RefusedWhileRecording("copy to device"));
    std::memcpy(device_dst, host_src, bytes);
  }
  void CopyToHost(void* host_dst, const void* device_src, size_t bytes) override {
    if (recording_ != nullptr) return RecordError(RefusedWhileRecording("copy to host"));
    std::memcpy(host_dst, device_src, bytes);
  }
  void Fill(void* device_dst, size_t bytes, unsigned char value) override {
    Enqueue([=] { std::memset(device_dst, value, bytes); });
  }
  void UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) override {
    if (recording_ != nullptr) return RecordError(RefusedWhileRecording("upload"));
    ConvertFromFloat(dtype, host_src, count, device_dst);
  }
  void DownloadFloat(float* host_dst, const DeviceMatrix& src) override {
    if (recording_ != nullptr) return RecordError(RefusedWhileRecording("download"));
    for (int64_t r = 0; r < src.rows; ++r) {
      for (int64_t c = 0; c < src.cols; ++c) host_dst[r * src.cols + c] = ElementAt(src, r, c);
    }
  }
  absl::StatusOr<MemoryBudget> AvailableMemory() override { return MemoryBudget{kSimulatedMemoryBytes, "simulated device"}; }
  int max_attention_head_dim() const override { return cuda::kMaxAttentionHeadDim; }
  absl::Status PlanAttention(const AttentionBatchLayout& layout) override {
    absl::StatusOr<cuda::PagedAttentionPlan> plan = cuda::BuildPagedAttentionPlan(layout);
    if (!plan.ok()) return plan.status();
    plan_ = std::move(*plan);
    return absl::OkStatus();
  }
  bool samples_on_device() const override { return true; }
  // Step graphs as closures: while recording, each op's kernel launch is kept with its arguments (the pointers
  // and shapes it was given, as a CUDA graph keeps a kernel's parameters) instead of run.
  bool records_step_graphs() const override { return true; }
  absl::Status BeginStepGraph() override {
    if (recording_ != nullptr) return absl::FailedPreconditionError("simulated cuda: already recording a step graph");
    recording_ = std::make_unique<RecordedOps>();
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<StepGraph>> EndStepGraph() override {
    if (recording_ == nullptr) return absl::FailedPreconditionError("simulated cuda: not recording a step graph");
    return std::unique_ptr<StepGraph>(std::move(recording_));
  }
  absl::Status ReplayStepGraph(StepGraph& graph) override {
    for (const std::function<void()>& op : static_cast<RecordedOps&>(graph).ops) op();
    return absl::OkStatus();
  }

 protected:
  // As CudaBackend: our kernels and FlashInfer's sampling stages (here their host stand-ins).
  absl::Status SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows,
                                std::span<int32_t> tokens, std::span<float> logprobs) override {
    if (recording_ != nullptr) return RefusedWhileRecording("sample tokens");
    return sampler_.Sample(logits, rows, tokens, logprobs);
  }
  absl::Status ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                             std::span<TokenLogprob> top) override {
    if (recording_ != nullptr) return RefusedWhileRecording("score rows");
    return sampler_.Score(logits, targets, scores, top);
  }
  absl::Status SynchronizeImpl() override {
    if (recording_ != nullptr) return RefusedWhileRecording("synchronize");
    absl::Status status = std::move(pending_error_);
    pending_error_ = absl::OkStatus();
    return status;
  }
  void EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
                 const DeviceMatrix& out) override {
    Enqueue([=, this] {
      cuda::LaunchEmbed(ids, positions, table, position_table, out, nullptr);
      Check("embed");
    });
  }
  void LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                     const DeviceMatrix& out) override {
    Enqueue([=, this] {
      cuda::LaunchNorm(in, weight, bias, eps, /*rms=*/false, out, nullptr);
      Check("layer norm");
    });
  }
  void RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) override {
    Enqueue([=, this] { Check("rms norm", cuda::RunRmsNorm(in, weight, eps, out, nullptr)); });
  }
  void RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) override {
    Enqueue([=, this] { Check("head rms norm", cuda::RunRmsNormHeads(x, heads, head_dim, weight, eps, nullptr)); });
  }
  void LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
                  bool accumulate) override {
    Enqueue([=] { Gemm(in, weight, bias, out, accumulate, std::nullopt); });
  }
  // As CudaBackend: the activations cuBLASLt has an epilogue for are applied to the float32 sum before its one rounding.
  void LinearActivateImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                          const DeviceMatrix& out) override {
    if (!cuda::GemmEpilogueFor(act).has_value()) {
      Backend::LinearActivateImpl(in, weight, bias, act, out);
      return;
    }
    Enqueue([=] { Gemm(in, weight, bias, out, /*accumulate=*/false, act); });
  }
  void RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                const float* cos_sin) override {
    Enqueue([=, this] { Check("rope", cuda::RunRope(x, heads, head_dim, rotary_dim, positions, cos_sin, nullptr)); });
  }
  void ActivateImpl(Activation act, const DeviceMatrix& x) override {
    Enqueue([=, this] {
      cuda::LaunchActivate(act, x, nullptr);
      Check("activation");
    });
  }
  void GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) override {
    Enqueue([=, this] { Check("gated activation", cuda::RunGatedActivate(act, in, out, nullptr)); });
  }
  void AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) override {
    Enqueue([=, this] {
      cuda::LaunchAdd(x, y, nullptr);
      Check("add");
    });
  }
  void WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) override {
    Enqueue([=, this] {
      cuda::LaunchWriteKv(k, v, slots, kv, nullptr);
      Check("kv write");
    });
  }
  // As CudaBackend: FlashInfer (here its stand-in) over the cache, then our hub merge, for the head sizes
  // FlashInfer is compiled for; our own paged kernel for the others.
  void AttentionImpl(const AttentionParams& params) override {
    Enqueue([=, this] {
      if (!cuda::AttentionRunsOnFlashInfer(params.kv.head_dim, params.num_heads, params.kv.num_kv_heads)) {
        cuda::LaunchAttention(params, nullptr);
        Check("attention");
        return;
      }
      // As CudaBackend::AttentionImpl: over q as it is, or over each sequence's verbal and hub queries packed.
      const bool grouped = plan_.hub_heads_grouped;
      const size_t packed_elems = grouped ? static_cast<size_t>(params.num_seqs) * 2 * params.num_heads * params.kv.head_dim : 0;
      std::vector<uint16_t> packed_q(packed_elems), packed_out(packed_elems);
      const AttentionParams attended = grouped ? cuda::GroupedHubView(params, packed_q.data(), packed_out.data()) : params;
      if (grouped) {
        cuda::LaunchPackGroupedHubQueries(params, packed_q.data(), nullptr);
        Check("pack grouped hub queries");
      }
      std::vector<float> lse(static_cast<size_t>(attended.num_verbal_rows + attended.num_hub_rows) * attended.num_heads);
      FlashInferStandIn(plan_, attended, cuda::FlashInferWindowLeft(params), lse.data());
      cuda::LaunchHubMerge(params, lse.data(), grouped ? packed_out.data() : nullptr, nullptr);
      Check("hub merge");
    });
  }
  void GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) override {
    Enqueue([=, this] {
      cuda::LaunchGatherRows(src, rows, dst, nullptr);
      Check("gather rows");
    });
  }
  void ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) override {
    Enqueue([=, this] {
      cuda::LaunchScatterRows(src, rows, dst, accumulate, nullptr);
      Check("scatter rows");
    });
  }
  void FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) override {
    Enqueue([=, this] {
      cuda::LaunchFillRows(row, out, nullptr);
      Check("fill rows");
    });
  }
  void SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) override {
    Enqueue([=, this] {
      cuda::LaunchSumRows(src, sum, nullptr);
      Check("sum rows");
    });
  }

 private:
  // Runs `op`, or keeps it in the step graph being recorded.
  void Enqueue(std::function<void()> op) {
    if (recording_ != nullptr) {
      recording_->ops.push_back(std::move(op));
    } else {
      op();
    }
  }
  static absl::Status RefusedWhileRecording(const char* op) {
    return absl::FailedPreconditionError(absl::StrCat("simulated cuda: ", op, " while a step graph is recorded (a CUDA stream "
                                                      "capture refuses it)"));
  }
  void RecordError(absl::Status status) {
    if (pending_error_.ok()) pending_error_ = std::move(status);
  }
  // Keeps the first failed launch until Synchronize, as CudaBackend keeps the first asynchronous error.
  // Records the first failure of `op`: the message an elementwise_ops.h dispatch returned, else the simulator's.
  void Check(const char* op, std::string failure = {}) {
    if (failure.empty()) failure = simt::TakeFailure();
    if (!failure.empty()) RecordError(absl::InternalError(absl::StrCat("cuda ", op, ": ", failure)));
  }

  DType element_;
  absl::Status pending_error_;
  cuda::PagedAttentionPlan plan_;  // from the last PlanAttention
  cuda::DeviceSampler sampler_;
  std::unique_ptr<RecordedOps> recording_;  // while recording a step graph
};

}  // namespace

std::unique_ptr<Backend> CreateSimulatedCudaBackend(DType element) { return std::make_unique<SimulatedCudaBackend>(element); }

absl::StatusOr<std::unique_ptr<Backend>> CreateSimulatedCudaBackendFor(const BackendOptions& options) {
  absl::StatusOr<DType> element = PlanCudaDType(options);
  if (!element.ok()) return element.status();
  return CreateSimulatedCudaBackend(*element);
}

}  // namespace arach::testing
