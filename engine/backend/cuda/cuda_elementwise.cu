// Row-wise and element-wise kernels: embedding, norms, RoPE, activations, residual adds, KV writes,
// row gathers/scatters.
#include <cmath>

#include "engine/backend/cuda/activation_math.cuh"
#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"

namespace arach::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void EmbedKernel(const int32_t* ids, const int32_t* positions, Rows<T> table, Rows<T> position_table, bool with_positions,
                            Rows<T> out) {
  const int64_t r = blockIdx.x;
  const T* tok = table.row(ids[r]);
  const T* pos = with_positions ? position_table.row(positions[r]) : nullptr;
  T* dst = out.row(r);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) {
    float v = ToFloat(tok[c]);
    if (pos != nullptr) v += ToFloat(pos[c]);
    dst[c] = FromFloat<T>(v);
  }
}

template <typename T>
__global__ void NormKernel(Rows<T> in, const T* weight, const T* bias, float eps, bool rms, Rows<T> out) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const T* x = in.row(r);
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
  T* y = out.row(r);
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    float v = (ToFloat(x[c]) - mean) * inv * ToFloat(weight[c]);
    if (bias != nullptr) v += ToFloat(bias[c]);
    y[c] = FromFloat<T>(v);
  }
}

// One block per row, one warp per head (heads strided over the block's warps).
template <typename T>
__global__ void RmsNormHeadsKernel(Rows<T> x, int heads, int head_dim, const T* weight, float eps) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  T* row = x.row(blockIdx.x);
  for (int h = warp; h < heads; h += warps) {
    T* v = row + static_cast<int64_t>(h) * head_dim;
    float sq = 0.0f;
    for (int c = lane; c < head_dim; c += 32) {
      const float f = ToFloat(v[c]);
      sq += f * f;
    }
    const float inv = rsqrtf(WarpSum(sq) / static_cast<float>(head_dim) + eps);
    for (int c = lane; c < head_dim; c += 32) v[c] = FromFloat<T>(ToFloat(v[c]) * inv * ToFloat(weight[c]));
  }
}

template <typename T>
__global__ void RopeKernel(Rows<T> x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* cos_sin) {
  const int64_t r = blockIdx.x;
  const int half = rotary_dim / 2;
  const float* cos_table = cos_sin + static_cast<int64_t>(positions[r]) * rotary_dim;  // [half] cos, then [half] sin
  T* row = x.row(r);
  for (int i = threadIdx.x; i < heads * half; i += blockDim.x) {
    const int h = i / half, d = i % half;
    const float c = cos_table[d], s = cos_table[half + d];
    T* head = row + static_cast<int64_t>(h) * head_dim;
    const float a = ToFloat(head[d]), b = ToFloat(head[d + half]);
    head[d] = FromFloat<T>(a * c - b * s);
    head[d + half] = FromFloat<T>(b * c + a * s);
  }
}

template <typename T>
__global__ void ActivateKernel(Activation act, Rows<T> x) {
  const int64_t r = blockIdx.x;
  T* row = x.row(r);
  for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x) row[c] = FromFloat<T>(Act(act, ToFloat(row[c])));
}

template <typename T>
__global__ void GatedActivateKernel(Activation act, Rows<T> in, Rows<T> out) {
  const int64_t r = blockIdx.x;
  const T* gate = in.row(r);
  const T* up = gate + out.cols;
  T* y = out.row(r);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) y[c] = FromFloat<T>(Act(act, ToFloat(gate[c])) * ToFloat(up[c]));
}

template <typename T>
__global__ void AddKernel(Rows<T> x, Rows<T> y) {
  const int64_t r = blockIdx.x;
  T* a = x.row(r);
  const T* b = y.row(r);
  for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x) a[c] = FromFloat<T>(ToFloat(a[c]) + ToFloat(b[c]));
}

template <typename T>
__global__ void WriteKvKernel(Rows<T> k, Rows<T> v, const int32_t* slots, T* k_cache, T* v_cache, int64_t slot_elems) {
  const int64_t r = blockIdx.x;
  const int64_t base = static_cast<int64_t>(slots[r]) * slot_elems;
  for (int64_t c = threadIdx.x; c < slot_elems; c += blockDim.x) {
    k_cache[base + c] = k.row(r)[c];
    v_cache[base + c] = v.row(r)[c];
  }
}

template <typename T>
__global__ void GatherRowsKernel(Rows<T> src, const int32_t* rows, Rows<T> dst) {
  const int64_t r = blockIdx.x;
  T* d = dst.row(r);
  if (rows[r] < 0) {  // Backend::kNoRow: zeros
    for (int64_t c = threadIdx.x; c < dst.cols; c += blockDim.x) d[c] = FromFloat<T>(0.0f);
    return;
  }
  const T* s = src.row(rows[r]);
  for (int64_t c = threadIdx.x; c < dst.cols; c += blockDim.x) d[c] = s[c];
}

template <typename T>
__global__ void ScatterRowsKernel(Rows<T> src, const int32_t* rows, Rows<T> dst, bool accumulate) {
  const int64_t r = blockIdx.x;
  if (rows[r] < 0) return;  // Backend::kNoRow: dropped
  const T* s = src.row(r);
  T* d = dst.row(rows[r]);
  for (int64_t c = threadIdx.x; c < src.cols; c += blockDim.x) d[c] = accumulate ? FromFloat<T>(ToFloat(d[c]) + ToFloat(s[c])) : s[c];
}

template <typename T>
__global__ void FillRowsKernel(const T* row, Rows<T> out) {
  T* d = out.row(blockIdx.x);
  for (int64_t c = threadIdx.x; c < out.cols; c += blockDim.x) d[c] = row[c];
}

// One thread per column, walking the rows in order (the same sum on every run; the reads of a warp are one row's
// consecutive columns).
template <typename T>
__global__ void SumRowsKernel(Rows<T> src, float* sum) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= src.cols) return;
  float total = 0.0f;
  for (int64_t r = 0; r < src.rows; ++r) total += ToFloat(src.row(r)[c]);
  sum[c] = total;
}

}  // namespace

void LaunchEmbed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
                 const DeviceMatrix& out, cudaStream_t stream) {
  if (out.rows == 0) return;
  const bool with_positions = position_table.data != nullptr;
  ARACH_DISPATCH_HALF(out.dtype, T, {
    ARACH_LAUNCH(EmbedKernel<T>, static_cast<unsigned>(out.rows), kThreads, 0, stream)(
        ids, positions, Rows<T>(table), with_positions ? Rows<T>(position_table) : Rows<T>(table), with_positions, Rows<T>(out));
  })
}

void LaunchNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps, bool rms,
                const DeviceMatrix& out, cudaStream_t stream) {
  if (in.rows == 0) return;
  ARACH_DISPATCH_HALF(in.dtype, T, {
    ARACH_LAUNCH(NormKernel<T>, static_cast<unsigned>(in.rows), kThreads, 0, stream)(Rows<T>(in), static_cast<const T*>(weight.data),
                                                                         static_cast<const T*>(bias.data), eps, rms, Rows<T>(out));
  })
}

void LaunchRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_DISPATCH_HALF(x.dtype, T, {
    ARACH_LAUNCH(RmsNormHeadsKernel<T>, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows<T>(x), heads, head_dim,
                                                                                static_cast<const T*>(weight.data), eps);
  })
}

void LaunchRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* cos_sin,
                cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_DISPATCH_HALF(x.dtype, T, {
    ARACH_LAUNCH(RopeKernel<T>, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows<T>(x), heads, head_dim, rotary_dim, positions, cos_sin);
  })
}

void LaunchActivate(Activation act, const DeviceMatrix& x, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_DISPATCH_HALF(x.dtype, T, {
    ARACH_LAUNCH(ActivateKernel<T>, static_cast<unsigned>(x.rows), kThreads, 0, stream)(act, Rows<T>(x));
  })
}

void LaunchGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream) {
  if (in.rows == 0) return;
  ARACH_DISPATCH_HALF(in.dtype, T, {
    ARACH_LAUNCH(GatedActivateKernel<T>, static_cast<unsigned>(in.rows), kThreads, 0, stream)(act, Rows<T>(in), Rows<T>(out));
  })
}

void LaunchAdd(const DeviceMatrix& x, const DeviceMatrix& y, cudaStream_t stream) {
  if (x.rows == 0) return;
  ARACH_DISPATCH_HALF(x.dtype, T, {
    ARACH_LAUNCH(AddKernel<T>, static_cast<unsigned>(x.rows), kThreads, 0, stream)(Rows<T>(x), Rows<T>(y));
  })
}

void LaunchWriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv, cudaStream_t stream) {
  if (k.rows == 0) return;
  ARACH_DISPATCH_HALF(k.dtype, T, {
    ARACH_LAUNCH(WriteKvKernel<T>, static_cast<unsigned>(k.rows), kThreads, 0, stream)(Rows<T>(k), Rows<T>(v), slots, static_cast<T*>(kv.k),
                                                                           static_cast<T*>(kv.v),
                                                                           static_cast<int64_t>(kv.num_kv_heads) * kv.head_dim);
  })
}

void LaunchGatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, cudaStream_t stream) {
  if (dst.rows == 0) return;
  ARACH_DISPATCH_HALF(src.dtype, T, {
    ARACH_LAUNCH(GatherRowsKernel<T>, static_cast<unsigned>(dst.rows), kThreads, 0, stream)(Rows<T>(src), rows, Rows<T>(dst));
  })
}

void LaunchScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate, cudaStream_t stream) {
  if (src.rows == 0) return;
  ARACH_DISPATCH_HALF(src.dtype, T, {
    ARACH_LAUNCH(ScatterRowsKernel<T>, static_cast<unsigned>(src.rows), kThreads, 0, stream)(Rows<T>(src), rows, Rows<T>(dst), accumulate);
  })
}

void LaunchSumRows(const DeviceMatrix& src, const DeviceMatrix& sum, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((src.cols + kThreads - 1) / kThreads);
  ARACH_DISPATCH_HALF(src.dtype, T, {
    ARACH_LAUNCH(SumRowsKernel<T>, blocks, kThreads, 0, stream)(Rows<T>(src), static_cast<float*>(sum.data));
  })
}

void LaunchFillRows(const DeviceMatrix& row, const DeviceMatrix& out, cudaStream_t stream) {
  if (out.rows == 0) return;
  ARACH_DISPATCH_HALF(out.dtype, T, {
    ARACH_LAUNCH(FillRowsKernel<T>, static_cast<unsigned>(out.rows), kThreads, 0, stream)(static_cast<const T*>(row.data), Rows<T>(out));
  })
}

}  // namespace arach::cuda
