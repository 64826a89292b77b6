// The CUDA backend: weights, activations and KV cache in one 16-bit type, bf16 or f16 (PlanCudaDType; float32
// arithmetic inside kernels and GEMMs),
// GEMMs through cuBLASLt, attention through FlashInfer for head sizes 64 and 128 with the ARACH hub merged in
// by our kernel (cuda_hub_merge.cu; our own paged kernel, cuda_attention.cu, for other head sizes), own
// kernels for the rest (cuda_elementwise.cu), sampling on the device (device_sampling.h). All work is
// queued on one stream; ops return at once and their errors surface at Synchronize().
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda/cublaslt_gemm.h"
#include "engine/backend/cuda/device_sampling.h"
#include "engine/backend/cuda/flashinfer_attention.h"

namespace arach {

class CudaBackend final : public Backend {
 public:
  // Uses device `device_index`, computing in `element` (kBF16 or kF16); FAILED_PRECONDITION where the device does
  // not exist.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(int device_index, DType element);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string Describe() const override { return description_; }
  DType activation_dtype() const override { return element_; }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateStaging(size_t bytes) override;
  void CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override;
  void CopyToHost(void* host_dst, const void* device_src, size_t bytes) override;
  void Fill(void* device_dst, size_t bytes, unsigned char value) override;
  void UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) override;
  void DownloadFloat(float* host_dst, const DeviceMatrix& src) override;
  absl::StatusOr<MemoryBudget> AvailableMemory() override;
  int max_attention_head_dim() const override;
  absl::Status PlanAttention(const AttentionBatchLayout& layout) override;
  bool samples_on_device() const override { return true; }
  // CUDA graphs, captured from the backend's stream.
  bool records_step_graphs() const override { return true; }
  absl::Status BeginStepGraph() override;
  absl::StatusOr<std::unique_ptr<StepGraph>> EndStepGraph() override;
  absl::Status ReplayStepGraph(StepGraph& graph) override;

 protected:
  absl::Status ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                             std::span<TokenLogprob> top) override;
  absl::Status SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows,
                                std::span<int32_t> tokens, std::span<float> logprobs) override;
  absl::Status SynchronizeImpl() override;

  void EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
             const DeviceMatrix& position_table, const DeviceMatrix& out) override;
  void LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                 const DeviceMatrix& out) override;
  void RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) override;
  void RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) override;
  void LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
              bool accumulate) override;
  // GELU-tanh and ReLU in cuBLASLt's epilogue; other activations as Linear, then Activate.
  void LinearActivateImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                          const DeviceMatrix& out) override;
  void RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
            const float* cos_sin) override;
  void ActivateImpl(Activation act, const DeviceMatrix& x) override;
  void GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) override;
  void AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) override;
  void WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) override;
  void AttentionImpl(const AttentionParams& params) override;
  void GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) override;
  void ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) override;
  void FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) override;
  void SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) override;

 private:
  CudaBackend() = default;
  // Keeps the first error of the step (reported and cleared by Synchronize).
  void Record(absl::Status status);
  // Records a failed kernel launch of `op`.
  void CheckLaunch(const char* op);
  // Records the message of a failed op from elementwise_ops.h ("" = none), then any launch error.
  void CheckRun(const std::string& failure, const char* op);

  int device_ = 0;
  DType element_ = DType::kBF16;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CublasLtGemm> gemm_;
  std::unique_ptr<cuda::FlashInferAttention> flashinfer_;
  std::unique_ptr<cuda::DeviceSampler> sampler_;
  absl::Status pending_error_;
};

}  // namespace arach
