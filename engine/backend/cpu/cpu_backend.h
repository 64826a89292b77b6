// The CPU backend: float32 activations, float32, f16 or bf16 weight matrices (halves widened to float32 in
// registers: float32 arithmetic either way), GEMMs through our kernels and OpenBLAS, loops for the rest.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_amx.h"
#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/cpu/cpu_threads.h"
#include "engine/backend/cpu/cpu_weight_dtype.h"
#include "engine/sampling/sampler.h"

namespace arach {

class CpuBackend final : public Backend {
 public:
  // Runs its parallel loops on a team of `threads.threads` threads (cpu_parallel.h) and OpenBLAS
  // single-threaded inside them.
  CpuBackend(CpuThreadPlan threads, WeightDTypePlan weights, KvDTypePlan kv = {});
  int threads() const { return team_.threads(); }

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string Describe() const override;
  DType activation_dtype() const override { return DType::kF32; }
  DType weight_dtype() const override { return weights_.dtype; }
  DType kv_cache_dtype() const override { return kv_.dtype; }  // f32, f16 or bf16

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override;
  void CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override;
  void CopyToHost(void* host_dst, const void* device_src, size_t bytes) override;
  void Fill(void* device_dst, size_t bytes, unsigned char value) override;
  void UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) override;
  void DownloadFloat(float* host_dst, const DeviceMatrix& src) override;
  absl::StatusOr<MemoryBudget> AvailableMemory() override;
  int max_attention_head_dim() const override { return 1 << 16; }  // the loops take any even size
  // The host's Sampler on each row where the logits are (no copy), rows in parallel on the team.
  bool samples_on_device() const override { return true; }

 protected:
  absl::Status SynchronizeImpl() override { return absl::OkStatus(); }

  void EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
             const DeviceMatrix& position_table, const DeviceMatrix& out) override;
  void LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                 const DeviceMatrix& out) override;
  void RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) override;
  void RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) override;
  void LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
              bool accumulate) override;  // cpu_linear.cc
  void RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
            const float* cos_sin) override;
  void ActivateImpl(Activation act, const DeviceMatrix& x) override;  // cpu_activation.cc
  void GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) override;  // cpu_activation.cc
  void AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) override;
  void WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) override;
  void AttentionImpl(const AttentionParams& params) override;  // cpu_attention.cc
  void GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) override;
  void ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) override;
  void FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) override;
  void SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) override;
  // The rows where they are (no copy), one per chunk of the team.
  absl::Status ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                             std::span<TokenLogprob> top) override;
  absl::Status SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                                std::span<float> logprobs) override;

 private:
  std::string thread_reason_;  // why the team has its size (CpuThreadPlan::reason)
  WeightDTypePlan weights_;
  KvDTypePlan kv_;
  cpu::AmxSupport amx_;  // int8 and bf16 products on AMX tiles where available (cpu_amx.h)
  cpu::ThreadTeam team_;
  std::mutex samplers_mutex_;     // one SampleTokens at a time uses the samplers
  std::vector<Sampler> samplers_;  // [team threads] each thread's scratch
};

}  // namespace arach
