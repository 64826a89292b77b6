// Row-wise and element-wise kernels: embedding, norms, RoPE, activations, residual adds, KV writes,
// row gathers/scatters.
#include <cmath>

#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"

namespace arach::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void EmbedKernel(const int32_t* ids, const int32_t* positions, Rows table, Rows position_table, bool with_positions,
                            Rows out) {
  const int64_t r = blockIdx.x;
  const bf16* tok = table.row(ids[r]);
  const bf16* pos = with_positions ? position_table.row(positions[r]) : nullptr;
  bf16* dst = out.row(r);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) {
    float v = ToFloat(tok[c]);
    if (pos != nullptr) v += ToFloat(pos[c]);
    dst[c] = ToBf16(v);
  }
}

__global__ void NormKernel(Rows in, const bf16* weight, const bf16* bias, float eps, bool rms, Rows out) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const bf16* x = in.row(r);
  const int64_t n = in.cols;
  float mean = 0.0f;
  if (!rms) {
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < n; c += blockDim.x) sum += ToFloat(x[c]);
    mean = BlockSum(sum, shared) / static_cast<float>(n);
  }
  float sq = 0.0f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float d = ToFloat(x[c]) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(BlockSum(sq, shared) / static_cast<float>(n) + eps);
  bf16* y = out.row(r);
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    float v = (ToFloat(x[c]) - mean) * inv * ToFloat(weight[c]);
    if (bias != nullptr) v += ToFloat(bias[c]);
    y[c] = ToBf16(v);
  }
}

// One block per row, one warp per head (heads strided over the block's warps).
__global__ void RmsNormHeadsKernel(Rows x, int heads, int head_dim, const bf16* weight, float eps) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  bf16* row = x.row(blockIdx.x);
  for (int h = warp; h < heads; h += warps) {
    bf16* v = row + static_cast<int64_t>(h) * head_dim;
    float sq = 0.0f;
    for (int c = lane; c < head_dim; c += 32) {
      const float f = ToFloat(v[c]);
      sq += f * f;
    }
    const float inv = rsqrtf(WarpSum(sq) / static_cast<float>(head_dim) + eps);
    for (int c = lane; c < head_dim; c += 32) v[c] = ToBf16(ToFloat(v[c]) * inv * ToFloat(weight[c]));
  }
}

__global__ void RopeKernel(Rows x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* inv_freq) {
  const int64_t r = blockIdx.x;
  const int half = rotary_dim / 2;
  const float position = static_cast<float>(positions[r]);
  bf16* row = x.row(r);
  for (int i = threadIdx.x; i < heads * half; i += blockDim.x) {
    const int h = i / half, d = i % half;
    float s, c;
    sincosf(position * inv_freq[d], &s, &c);
    bf16* head = row + static_cast<int64_t>(h) * head_dim;
    const float a = ToFloat(head[d]), b = ToFloat(head[d + half]);
    head[d] = ToBf16(a * c - b * s);
    head[d + half] = ToBf16(b * c + a * s);
  }
}

__device__ __forceinline__ float Act(Activation act, float x) {
  switch (act) {
    case Activation::kGeluTanh: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Activation::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case Activation::kSilu: return x / (1.0f + __expf(-x));
    case Activation::kRelu: return fmaxf(x, 0.0f);
  }
  return x;
}

__global__ void ActivateKernel(Activation act, Rows x) {
  const int64_t r = blockIdx.x;
  bf16* row = x.row(r);
  for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x) row[c] = ToBf16(Act(act, ToFloat(row[c])));
}

__global__ void GatedActivateKernel(Activation act, Rows in, Rows out) {
  const int64_t r = blockIdx.x;
  const bf16* gate = in.row(r);
  const bf16* up = gate + out.cols;
  bf16* y = out.row(r);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) y[c] = ToBf16(Act(act, ToFloat(gate[c])) * ToFloat(up[c]));
}

__global__ void AddKernel(Rows x, Rows y) {
  const int64_t r = blockIdx.x;
  bf16* a = x.row(r);
  const bf16* b = y.row(r);
  for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x) a[c] = ToBf16(ToFloat(a[c]) + ToFloat(b[c]));
}

__global__ void WriteKvKernel(Rows k, Rows v, const int32_t* slots, bf16* k_cache, bf16* v_cache, int64_t slot_elems) {
  const int64_t r = blockIdx.x;
  const int64_t base = static_cast<int64_t>(slots[r]) * slot_elems;
  for (int64_t c = threadIdx.x; c < slot_elems; c += blockDim.x) {
    k_cache[base + c] = k.row(r)[c];
    v_cache[base + c] = v.row(r)[c];
  }
}

__global__ void GatherRowsKernel(Rows src, const int32_t* rows, Rows dst) {
  const int64_t r = blockIdx.x;
  const bf16* s = src.row(rows[r]);
  bf16* d = dst.row(r);
  for (int64_t c = threadIdx.x; c < dst.cols; c += blockDim.x) d[c] = s[c];
}

__global__ void ScatterRowsKernel(Rows src, const int32_t* rows, Rows dst, bool accumulate) {
  const int64_t r = blockIdx.x;
  const bf16* s = src.row(r);
  bf16* d = dst.row(rows[r]);
  for (int64_t c = threadIdx.x; c < src.cols; c += blockDim.x) d[c] = accumulate ? ToBf16(ToFloat(d[c]) + ToFloat(s[c])) : s[c];
}

__global__ void FillRowsKernel(const bf16* row, Rows out) {
  bf16* d = out.row(blockIdx.x);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) d[c] = row[c];
}

}  // namespace

void LaunchEmbed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
                 const DeviceMatrix& out, cudaStream_t stream) {
  if (out.rows == 0) return;
  const bool with_positions = position_table.data != nullptr;
  ARACH_LAUNCH(EmbedKernel, static_cast<unsigned>(out.rows), kThreads, 0, stream)(
      ids, positions, Rows(table), with_positions ? Rows(position_table) : Rows(table), with_positions, Rows(out));
}

void LaunchNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps, bool rms,
                const DeviceMatrix& out, cudaStream_t stream) {
  if (in.rows == 0) return;
  ARACH_LAUNCH(NormKernel, static_cast<unsigned>(in.rows), kThreads, 0, stream)(Rows(in), static_cast<const bf16*>(weight.data),
                                                                       static_cast<const bf16*>(bias.data), eps, rms, Rows(out));
}

void LaunchRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_LAUNCH(RmsNormHeadsKernel, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows(x), heads, head_dim,
                                                                              static_cast<const bf16*>(weight.data), eps);
}

void LaunchRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* inv_freq,
                cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_LAUNCH(RopeKernel, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows(x), heads, head_dim, rotary_dim, positions, inv_freq);
}

void LaunchActivate(Activation act, const DeviceMatrix& x, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_LAUNCH(ActivateKernel, static_cast<unsigned>(x.rows), kThreads, 0, stream)(act, Rows(x));
}

void LaunchGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream) {
  if (in.rows == 0) return;
  ARACH_LAUNCH(GatedActivateKernel, static_cast<unsigned>(in.rows), kThreads, 0, stream)(act, Rows(in), Rows(out));
}

void LaunchAdd(const DeviceMatrix& x, const DeviceMatrix& y, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_LAUNCH(AddKernel, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows(x), Rows(y));
}

void LaunchWriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv, cudaStream_t stream) {
  if (k.rows == 0) return;
  ARACH_LAUNCH(WriteKvKernel, static_cast<unsigned>(k.rows), kThreads, 0, stream)(Rows(k), Rows(v), slots, static_cast<bf16*>(kv.k),
                                                                         static_cast<bf16*>(kv.v),
                                                                         static_cast<int64_t>(kv.num_kv_heads) * kv.head_dim);
}

void LaunchGatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, cudaStream_t stream) {
  if (dst.rows == 0) return;
  ARACH_LAUNCH(GatherRowsKernel, static_cast<unsigned>(dst.rows), kThreads, 0, stream)(Rows(src), rows, Rows(dst));
}

void LaunchScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate, cudaStream_t stream) {
  if (src.rows == 0) return;
  ARACH_LAUNCH(ScatterRowsKernel, static_cast<unsigned>(src.rows), kThreads, 0, stream)(Rows(src), rows, Rows(dst), accumulate);
}

void LaunchFillRows(const DeviceMatrix& row, const DeviceMatrix& out, cudaStream_t stream) {
  if (out.rows == 0) return;
  ARACH_LAUNCH(FillRowsKernel, static_cast<unsigned>(out.rows), kThreads, 0, stream)(static_cast<const bf16*>(row.data), Rows(out));
}

}  // namespace arach::cuda
