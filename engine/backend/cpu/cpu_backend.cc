#include "engine/backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/cpu_memory.h"
#include "engine/core/status.h"
#include "engine/backend/cpu/cpu_parallel.h"

namespace arach {
namespace {

// Buffers of at least a huge page are aligned to one and marked for transparent huge pages (madvise): a model's
// weights, its KV cache and the step workspaces are touched on every step, and 4 KiB pages cost a page fault each
// on first touch and a TLB miss on most reads after.
constexpr size_t kHugePageBytes = size_t{2} << 20;

class HostBuffer final : public DeviceBuffer {
 public:
  HostBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

inline float* Row(const DeviceMatrix& m, int64_t r) { return m.As<float>() + r * m.stride; }

constexpr float kMaxHalf = 65504.0f;  // the largest finite IEEE half

// Row r of `m` as float32 into dst ([m.cols]): any stored dtype, int8 rows times their scale.
void WidenRow(const DeviceMatrix& m, int64_t r, float* dst) {
  const char* row = static_cast<const char*>(m.data) + r * m.stride * DTypeSize(m.dtype);
  ConvertToFloat(m.dtype, row, static_cast<size_t>(m.cols), dst);
  if (m.row_scales != nullptr) {
    const float scale = m.row_scales[r];
    for (int64_t c = 0; c < m.cols; ++c) dst[c] *= scale;
  }
}

}  // namespace

CpuBackend::CpuBackend(CpuThreadPlan threads, WeightDTypePlan weights, KvDTypePlan kv)
    : thread_reason_(std::move(threads.reason)), weights_(std::move(weights)), kv_(std::move(kv)), team_(threads.threads) {
  // The backend parallelises its kernels itself (cpu_parallel.h) and calls OpenBLAS inside them.
  openblas_set_num_threads(1);
  amx_ = cpu::RequestAmx();
}

std::string CpuBackend::Describe() const {
  return absl::StrCat("cpu (", team_.threads(), " threads: ", thread_reason_, "; ", DTypeName(weights_.dtype), " weights: ",
                      weights_.reason,
                      weights_.dtype != DType::kI8 && weights_.dtype != DType::kBF16 ? ""
                      : (weights_.dtype == DType::kI8 ? amx_.int8 : amx_.bf16)
                          ? absl::StrCat(", products on ", amx_.reason, " from ", cpu::kAmxMinRows, " rows")
                          : absl::StrCat(", ", amx_.reason),
                      "; ", DTypeName(kv_.dtype), " KV cache: ", kv_.reason, "; OpenBLAS ",
                      openblas_get_corename(), " kernels)");
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CpuBackend::Allocate(size_t bytes) {
  const size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : 64;
  const size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cpu: cannot allocate ", bytes, " bytes"));
  }
  if (alignment == kHugePageBytes) madvise(data, rounded, MADV_HUGEPAGE);
  return std::unique_ptr<DeviceBuffer>(new HostBuffer(data, bytes));
}

absl::StatusOr<MemoryBudget> CpuBackend::AvailableMemory() {
  ARACH_ASSIGN_OR_RETURN(const int64_t mem_available, ReadMemAvailable());
  return PlanMemoryBudget(mem_available, ReadCgroupMemory());
}

void CpuBackend::CopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
}

void CpuBackend::CopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
}

void CpuBackend::Fill(void* device_dst, size_t bytes, unsigned char value) { std::memset(device_dst, value, bytes); }

void CpuBackend::UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) {
  ConvertFromFloat(dtype, host_src, count, device_dst);
}

void CpuBackend::DownloadFloat(float* host_dst, const DeviceMatrix& src) {
  for (int64_t r = 0; r < src.rows; ++r) WidenRow(src, r, host_dst + r * src.cols);
}

absl::Status CpuBackend::ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                                       std::span<TokenLogprob> top) {
  const size_t vocab = static_cast<size_t>(logits.cols);
  const size_t n = targets.empty() ? 0 : top.size() / targets.size();
  team_.ForEach(logits.rows, [&](int64_t r, int) {
    scores[r] = ScoreRow(std::span<const float>(logits.As<float>() + r * logits.stride, vocab), targets[r], top.subspan(r * n, n));
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                                          std::span<float> logprobs) {
  const size_t vocab = static_cast<size_t>(logits.cols);
  std::lock_guard<std::mutex> lock(samplers_mutex_);
  samplers_.resize(static_cast<size_t>(team_.threads()));
  team_.ForEach(static_cast<int64_t>(rows.size()), [&](int64_t r, int thread) {
    SamplerInput in = rows[static_cast<size_t>(r)];
    in.logits = std::span<const float>(logits.As<float>() + r * logits.stride, vocab);
    const SampledToken sampled = samplers_[static_cast<size_t>(thread)].Sample(in);
    tokens[static_cast<size_t>(r)] = sampled.token;
    if (!logprobs.empty()) logprobs[static_cast<size_t>(r)] = sampled.logprob;
  });
  return absl::OkStatus();
}

void CpuBackend::EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
                       const DeviceMatrix& position_table, const DeviceMatrix& out) {
  // Tables in the weight dtype: a row is widened into `out`, then the position row added. The widened position
  // row lives in this thread's scratch, grown once to the widest model it has served.
  thread_local std::vector<float> position_row;
  if (position_table.data != nullptr) position_row.resize(static_cast<size_t>(out.cols));
  for (int64_t r = 0; r < out.rows; ++r) {
    float* dst = Row(out, r);
    WidenRow(table, ids[r], dst);
    if (position_table.data != nullptr) {
      WidenRow(position_table, positions[r], position_row.data());
      for (int64_t c = 0; c < out.cols; ++c) dst[c] += position_row[c];
    }
  }
}

void CpuBackend::LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                           const DeviceMatrix& out) {
  const int64_t n = in.cols;
  const float* w = weight.As<float>();
  const float* b = bias.data != nullptr ? bias.As<float>() : nullptr;
  for (int64_t r = 0; r < in.rows; ++r) {
    const float* x = Row(in, r);
    float* y = Row(out, r);
    float mean = 0.0f;
    for (int64_t c = 0; c < n; ++c) mean += x[c];
    mean /= static_cast<float>(n);
    float var = 0.0f;
    for (int64_t c = 0; c < n; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t c = 0; c < n; ++c) y[c] = (x[c] - mean) * inv * w[c] + (b != nullptr ? b[c] : 0.0f);
  }
}

void CpuBackend::RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) {
  const int64_t n = in.cols;
  const float* w = weight.As<float>();
  for (int64_t r = 0; r < in.rows; ++r) {
    const float* x = Row(in, r);
    float* y = Row(out, r);
    float sum_sq = 0.0f;
    for (int64_t c = 0; c < n; ++c) sum_sq += x[c] * x[c];
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
    for (int64_t c = 0; c < n; ++c) y[c] = x[c] * inv * w[c];
  }
}

void CpuBackend::RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) {
  const float* w = weight.As<float>();
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      float* v = Row(x, r) + static_cast<int64_t>(h) * head_dim;
      float sum_sq = 0.0f;
      for (int c = 0; c < head_dim; ++c) sum_sq += v[c] * v[c];
      const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(head_dim) + eps);
      for (int c = 0; c < head_dim; ++c) v[c] = v[c] * inv * w[c];
    }
  }
}

void CpuBackend::RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                      const float* cos_sin) {
  const int half = rotary_dim / 2;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* cos_table = cos_sin + static_cast<int64_t>(positions[r]) * rotary_dim;
    const float* sin_table = cos_table + half;
    float* row = Row(x, r);
    for (int h = 0; h < heads; ++h) {
      float* head = row + static_cast<int64_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float a = head[i], b = head[i + half];
        head[i] = a * cos_table[i] - b * sin_table[i];
        head[i + half] = b * cos_table[i] + a * sin_table[i];
      }
    }
  }
}

void CpuBackend::AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) {
  for (int64_t r = 0; r < x.rows; ++r) {
    float* a = Row(x, r);
    const float* b = Row(y, r);
    for (int64_t c = 0; c < x.cols; ++c) a[c] += b[c];
  }
}

void CpuBackend::WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) {
  const int64_t row_elems = static_cast<int64_t>(kv.num_kv_heads) * kv.head_dim;  // one slot: [kv_heads, head_dim]
  const int64_t slot_bytes = row_elems * static_cast<int64_t>(DTypeSize(kv.dtype));
  // float32 rows stored as kv.dtype: f32 a copy; f16 and bf16 rounded to nearest even, f16 saturated at its
  // largest finite value (an infinite key would turn a whole softmax into NaN).
  thread_local std::vector<float> saturated;  // this thread's scratch, grown once: [row_elems] when f16
  if (kv.dtype == DType::kF16) saturated.resize(static_cast<size_t>(row_elems));
  auto store = [&](const float* row, void* dst) {
    if (kv.dtype == DType::kF16) {
      for (int64_t c = 0; c < row_elems; ++c) saturated[c] = std::clamp(row[c], -kMaxHalf, kMaxHalf);
      row = saturated.data();
    }
    ConvertFromFloat(kv.dtype, row, static_cast<size_t>(row_elems), dst);
  };
  for (int64_t r = 0; r < k.rows; ++r) {
    const int64_t slot = slots[r];
    store(Row(k, r), static_cast<char*>(kv.k) + slot * slot_bytes);
    store(Row(v, r), static_cast<char*>(kv.v) + slot * slot_bytes);
  }
}

void CpuBackend::GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) {
  for (int64_t r = 0; r < dst.rows; ++r) {
    if (rows[r] == kNoRow) {
      std::fill_n(Row(dst, r), dst.cols, 0.0f);
    } else {
      std::memcpy(Row(dst, r), Row(src, rows[r]), dst.cols * sizeof(float));
    }
  }
}

void CpuBackend::ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) {
  for (int64_t r = 0; r < src.rows; ++r) {
    if (rows[r] == kNoRow) continue;
    float* d = Row(dst, rows[r]);
    const float* s = Row(src, r);
    if (accumulate) {
      for (int64_t c = 0; c < src.cols; ++c) d[c] += s[c];
    } else {
      std::memcpy(d, s, src.cols * sizeof(float));
    }
  }
}

void CpuBackend::FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) {
  for (int64_t r = 0; r < out.rows; ++r) std::memcpy(Row(out, r), row.As<float>(), out.cols * sizeof(float));
}

void CpuBackend::SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) {
  float* total = Row(sum, 0);
  std::memcpy(total, Row(src, 0), src.cols * sizeof(float));
  for (int64_t r = 1; r < src.rows; ++r) {
    const float* row = Row(src, r);
    for (int64_t c = 0; c < src.cols; ++c) total[c] += row[c];
  }
}

}  // namespace arach
