#include "engine/backend/backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/status.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/backend/op_checks.h"
#if ARACH_WITH_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#endif

namespace arach {

absl::string_view DeviceKindName(DeviceKind kind) { return kind == DeviceKind::kCpu ? "cpu" : "cuda"; }

absl::StatusOr<DeviceKind> ParseDeviceKind(absl::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return absl::InvalidArgumentError(absl::StrCat("device \"", name, "\" is not one of cpu, cuda"));
}

bool Backend::Passes(absl::Status check) {
  if (check.ok()) return true;
  if (failed_check_.ok()) failed_check_ = std::move(check);
  return false;
}

absl::Status Backend::Synchronize() {
  absl::Status device = SynchronizeImpl();
  if (!failed_check_.ok()) return std::exchange(failed_check_, absl::OkStatus());
  return device;
}

void Backend::Embed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
                    const DeviceMatrix& out) {
  if (Passes(op_checks::CheckEmbed(table, position_table, out))) EmbedImpl(ids, positions, table, position_table, out);
}

void Backend::LayerNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                        const DeviceMatrix& out) {
  if (Passes(op_checks::CheckNorm("layer norm", in, weight, bias, out))) LayerNormImpl(in, weight, bias, eps, out);
}

void Backend::RmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) {
  if (Passes(op_checks::CheckNorm("rms norm", in, weight, DeviceMatrix{}, out))) RmsNormImpl(in, weight, eps, out);
}

void Backend::RmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) {
  if (Passes(op_checks::CheckNormHeads(x, heads, head_dim, weight))) RmsNormHeadsImpl(x, heads, head_dim, weight, eps);
}

void Backend::Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
                     bool accumulate) {
  if (Passes(op_checks::CheckLinear(in, weight, bias, out))) LinearImpl(in, weight, bias, out, accumulate);
}

void Backend::LinearActivate(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                             const DeviceMatrix& out) {
  if (Passes(op_checks::CheckLinear(in, weight, bias, out))) LinearActivateImpl(in, weight, bias, act, out);
}

void Backend::LinearActivateImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                                 const DeviceMatrix& out) {
  LinearImpl(in, weight, bias, out, /*accumulate=*/false);
  ActivateImpl(act, out);
}

void Backend::Rope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                   const float* cos_sin) {
  if (Passes(op_checks::CheckRope(x, heads, head_dim, rotary_dim))) RopeImpl(x, heads, head_dim, rotary_dim, positions, cos_sin);
}

void Backend::Activate(Activation act, const DeviceMatrix& x) { ActivateImpl(act, x); }

void Backend::GatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) {
  if (Passes(op_checks::CheckGatedActivate(in, out))) GatedActivateImpl(act, in, out);
}

void Backend::Add(const DeviceMatrix& x, const DeviceMatrix& y) {
  if (Passes(op_checks::CheckSameShape("add", x, y))) AddImpl(x, y);
}

void Backend::WriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) {
  if (Passes(op_checks::CheckWriteKv(k, v, kv))) WriteKvImpl(k, v, slots, kv);
}

void Backend::Attention(const AttentionParams& params) {
  if (Passes(op_checks::CheckAttention(params, max_attention_head_dim()))) AttentionImpl(params);
}

void Backend::GatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) {
  if (Passes(op_checks::CheckRowCopy("gather rows", src, dst))) GatherRowsImpl(src, rows, dst);
}

void Backend::ScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) {
  if (Passes(op_checks::CheckRowCopy("scatter rows", src, dst))) ScatterRowsImpl(src, rows, dst, accumulate);
}

void Backend::FillRows(const DeviceMatrix& row, const DeviceMatrix& out) {
  if (Passes(op_checks::CheckRowCopy("fill rows", row, out))) FillRowsImpl(row, out);
}

void Backend::SumRows(const DeviceMatrix& src, const DeviceMatrix& sum) {
  if (Passes(op_checks::CheckSumRows(src, sum))) SumRowsImpl(src, sum);
}

absl::Status Backend::SampleTokens(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                                   std::span<float> logprobs) {
  ARACH_RETURN_IF_ERROR(op_checks::CheckSampleTokens(logits, rows, tokens.size(), logprobs.size()));
  return SampleTokensImpl(logits, rows, tokens, logprobs);
}

absl::Status Backend::SampleTokensImpl(const DeviceMatrix&, std::span<const SamplerInput>, std::span<int32_t>, std::span<float>) {
  return absl::UnimplementedError(absl::StrCat(Describe(), " samples on the host"));
}

absl::Status Backend::ScoreRows(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                                std::span<TokenLogprob> top) {
  ARACH_RETURN_IF_ERROR(op_checks::CheckScoreRows(logits, targets, scores.size(), top.size()));
  return ScoreRowsImpl(logits, targets, scores, top);
}

absl::Status Backend::BeginStepGraph() { return absl::UnimplementedError(absl::StrCat(Describe(), " records no step graphs")); }

absl::StatusOr<std::unique_ptr<StepGraph>> Backend::EndStepGraph() {
  return absl::UnimplementedError(absl::StrCat(Describe(), " records no step graphs"));
}

absl::Status Backend::ReplayStepGraph(StepGraph&) {
  return absl::UnimplementedError(absl::StrCat(Describe(), " records no step graphs"));
}

absl::StatusOr<WeightDTypeChoice> ParseWeightDType(absl::string_view name) {
  if (name == "auto") return WeightDTypeChoice::kAuto;
  if (name == "f32") return WeightDTypeChoice::kF32;
  if (name == "f16") return WeightDTypeChoice::kF16;
  if (name == "bf16") return WeightDTypeChoice::kBF16;
  if (name == "int8") return WeightDTypeChoice::kInt8;
  return absl::InvalidArgumentError(absl::StrCat("weight dtype \"", name, "\" is not one of auto, f32, f16, bf16, int8"));
}

absl::string_view WeightDTypeChoiceName(WeightDTypeChoice choice) {
  switch (choice) {
    case WeightDTypeChoice::kAuto: return "auto";
    case WeightDTypeChoice::kF32: return "f32";
    case WeightDTypeChoice::kF16: return "f16";
    case WeightDTypeChoice::kBF16: return "bf16";
    case WeightDTypeChoice::kInt8: return "int8";
  }
  return "?";
}

absl::StatusOr<KvDTypeChoice> ParseKvCacheDType(absl::string_view name) {
  if (name == "auto") return KvDTypeChoice::kAuto;
  if (name == "f32") return KvDTypeChoice::kF32;
  if (name == "f16") return KvDTypeChoice::kF16;
  if (name == "bf16") return KvDTypeChoice::kBF16;
  return absl::InvalidArgumentError(absl::StrCat("KV cache dtype \"", name, "\" is not one of auto, f32, f16, bf16"));
}

absl::string_view KvDTypeChoiceName(KvDTypeChoice choice) {
  switch (choice) {
    case KvDTypeChoice::kAuto: return "auto";
    case KvDTypeChoice::kF32: return "f32";
    case KvDTypeChoice::kF16: return "f16";
    case KvDTypeChoice::kBF16: return "bf16";
  }
  return "?";
}

namespace {

class HostStagingBuffer final : public DeviceBuffer {
 public:
  explicit HostStagingBuffer(size_t bytes) : bytes_(bytes), data_(new char[std::max<size_t>(bytes, 1)]) {}
  void* data() override { return data_.get(); }
  size_t size() const override { return bytes_; }

 private:
  size_t bytes_;
  std::unique_ptr<char[]> data_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBuffer>> Backend::AllocateStaging(size_t bytes) {
  return std::unique_ptr<DeviceBuffer>(new HostStagingBuffer(bytes));
}

absl::StatusOr<DType> PlanCudaDType(const BackendOptions& options) {
  DType element = options.checkpoint_dtype == DType::kBF16 || options.checkpoint_dtype == DType::kF8E4M3 ? DType::kBF16
                                                                                                       : DType::kF16;
  switch (options.weight_dtype) {
    case WeightDTypeChoice::kAuto:
    case WeightDTypeChoice::kF32: break;
    case WeightDTypeChoice::kF16: element = DType::kF16; break;
    case WeightDTypeChoice::kBF16: element = DType::kBF16; break;
    case WeightDTypeChoice::kInt8:
      return absl::InvalidArgumentError("--weight_dtype int8: the CUDA backend computes in f16 or bf16 (use auto, f16 or bf16)");
  }
  const bool kv_matches = options.kv_cache_dtype == KvDTypeChoice::kAuto ||
                          (options.kv_cache_dtype == KvDTypeChoice::kF16 && element == DType::kF16) ||
                          (options.kv_cache_dtype == KvDTypeChoice::kBF16 && element == DType::kBF16);
  if (!kv_matches) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_cache_dtype ", KvDTypeChoiceName(options.kv_cache_dtype),
                                                   ": the CUDA backend caches K/V in its compute type, ", DTypeName(element),
                                                   " here (use auto)"));
  }
  return element;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(DeviceKind kind, const BackendOptions& options) {
  if (kind == DeviceKind::kCpu) {
    WeightDTypePlan weights = ResolveCpuWeightDType(options.weight_dtype);
    KvDTypePlan kv = PlanCpuKvDType(options.kv_cache_dtype, weights.dtype);
    return std::unique_ptr<Backend>(new CpuBackend(DetectCpuThreads(options.cpu_threads), std::move(weights), std::move(kv)));
  }
  ARACH_ASSIGN_OR_RETURN([[maybe_unused]] const DType element, PlanCudaDType(options));
  auto devices = ListCudaDevices();  // FAILED_PRECONDITION in builds without CUDA
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return absl::FailedPreconditionError("cuda: no CUDA device is present");
#if ARACH_WITH_CUDA
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> cuda, CudaBackend::Create(/*device_index=*/0, element));
  return std::unique_ptr<Backend>(std::move(cuda));
#else
  return absl::FailedPreconditionError("cuda: this build has no CUDA backend (" ARACH_CUDA_BUILD_NOTE ")");
#endif
}

}  // namespace arach
