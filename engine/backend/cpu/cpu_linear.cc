// Linear layers on CPU, float32, f16, bf16 or int8 weights (narrow weights are widened to float32 in registers:
// one conversion per vector; int8 rows' scales multiply each dot product; the arithmetic is float32 either way). Few rows (decode): a register-tiled kernel that streams each weight row
// once, parallel over output features. Many rows (prefill): OpenBLAS sgemm, one single-threaded call per
// thread on a slice of the output features (the weights are never repacked twice; half-width slices are
// widened into a per-thread float32 buffer first, a pass that the GEMM's M rows amortise).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <immintrin.h>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/cpu/half_elements.h"

namespace arach {
namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float VecF __attribute__((vector_size(kLanes * sizeof(float))));

inline VecF LoadVec(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

using cpu::BFloat16Bits;
using cpu::HalfBits;
using cpu::Widen;

// kLanes bf16 values widened to float32: the 16 bits become a float's upper half.
inline VecF LoadVec(const BFloat16Bits* p) {
  typedef uint16_t VecU16 __attribute__((vector_size(kLanes * sizeof(uint16_t))));
  typedef uint32_t VecU32 __attribute__((vector_size(kLanes * sizeof(uint32_t))));
  VecU16 half;
  std::memcpy(&half, p, sizeof(half));
  const VecU32 widened = __builtin_convertvector(half, VecU32) << 16;
  VecF v;
  std::memcpy(&v, &widened, sizeof(v));
  return v;
}

// kLanes IEEE halves widened to float32 (F16C's vcvtph2ps where the build targets it).
inline VecF LoadVec(const HalfBits* p) {
  VecF v;
#if defined(__AVX512F__)
  const __m512 wide = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  std::memcpy(&v, &wide, sizeof(v));
#elif defined(__F16C__) && defined(__AVX__)
  const __m256 wide = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  std::memcpy(&v, &wide, sizeof(v));
#else
  for (int i = 0; i < kLanes; ++i) v[i] = Widen(p[i]);
#endif
  return v;
}

// kLanes int8 codes widened to float32 (vpmovsxbd + vcvtdq2ps); the row's scale is applied to the dot product.
inline VecF LoadVec(const int8_t* p) {
  VecF v;
#if defined(__AVX512F__)
  const __m512 wide = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  std::memcpy(&v, &wide, sizeof(v));
#elif defined(__AVX2__)
  const __m256 wide = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  std::memcpy(&v, &wide, sizeof(v));
#else
  for (int i = 0; i < kLanes; ++i) v[i] = static_cast<float>(p[i]);
#endif
  return v;
}
inline float Widen(int8_t code) { return static_cast<float>(code); }

// The scale of weight row j: int8 rows carry one (DeviceMatrix::row_scales), other dtypes none.
inline float RowScale(const float* row_scales, int64_t j) { return row_scales != nullptr ? row_scales[j] : 1.0f; }

// Weight rows [first, last) widened to float32 (and scaled) into `dst` ([last - first, cols]).
template <typename W>
void WidenRows(const DeviceMatrix& weight, int64_t first, int64_t last, float* dst) {
  const int64_t cols = weight.cols;
  for (int64_t j = first; j < last; ++j) {
    const W* src = weight.As<W>() + j * weight.stride;
    float* out = dst + (j - first) * cols;
    const float scale = RowScale(weight.row_scales, j);
    int64_t c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      const VecF v = LoadVec(src + c) * scale;
      std::memcpy(out + c, &v, sizeof(v));
    }
    for (; c < cols; ++c) out[c] = Widen(src[c]) * scale;
  }
}

// Horizontal sum by halving (a loop over lanes compiles to one extract per lane).
inline float SumLanes(VecF v) {
  typedef float Vec4 __attribute__((vector_size(4 * sizeof(float))));
#if defined(__AVX512F__)
  typedef float Vec8 __attribute__((vector_size(8 * sizeof(float))));
  const Vec8 half = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Vec4 quarter = __builtin_shufflevector(half, half, 0, 1, 2, 3) + __builtin_shufflevector(half, half, 4, 5, 6, 7);
#elif defined(__AVX__)
  const Vec4 quarter = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
#else
  const Vec4 quarter = v;
#endif
  return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

// Rows at or below this count use the tiled kernel instead of sgemm.
constexpr int64_t kSmallRows = 12;
// Output features per task of the tiled kernel.
constexpr int64_t kFeatureTile = 4;
constexpr int64_t kChunksPerThread = 4;    // dynamic chunks per thread of one GEMM (work taken over when one stalls)
constexpr int64_t kMinGemmColumns = 128;   // columns of one BLAS call at least
constexpr int64_t kWidenedRows = 256;      // half-width weight rows widened to float32 per GEMM call

// out[i][j] (+)= scale[j] * sum_k x[i][k] * w[j][k] for i < MB, j < NB; W: float, half-width or int8 elements;
// scales: [NB] (int8 rows) or null (1).
template <int MB, int NB, typename W>
inline void Tile(const float* x, int64_t x_stride, const W* w, int64_t w_stride, const float* scales, int64_t k_size,
                 float* out, int64_t out_stride, bool accumulate) {
  VecF acc[MB][NB] = {};
  int64_t k = 0;
  for (; k + kLanes <= k_size; k += kLanes) {
    VecF wv[NB];
    for (int j = 0; j < NB; ++j) wv[j] = LoadVec(w + j * w_stride + k);
    for (int i = 0; i < MB; ++i) {
      const VecF xv = LoadVec(x + i * x_stride + k);
      for (int j = 0; j < NB; ++j) acc[i][j] += xv * wv[j];
    }
  }
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      float sum = SumLanes(acc[i][j]);
      for (int64_t kk = k; kk < k_size; ++kk) sum += x[i * x_stride + kk] * Widen(w[j * w_stride + kk]);
      sum *= RowScale(scales, j);
      float& o = out[i * out_stride + j];
      o = accumulate ? o + sum : sum;
    }
  }
}

// All rows of x against NB consecutive weight rows (scales: theirs, or null).
template <int NB, typename W>
void AllRows(const DeviceMatrix& in, const W* w, int64_t w_stride, const float* scales, float* out, int64_t out_stride,
             bool accumulate) {
  const float* x = in.As<float>();
  const int64_t k = in.cols;
  int64_t m = 0;
  for (; m + 4 <= in.rows; m += 4) {
    Tile<4, NB>(x + m * in.stride, in.stride, w, w_stride, scales, k, out + m * out_stride, out_stride, accumulate);
  }
  const float* xr = x + m * in.stride;
  float* o = out + m * out_stride;
  switch (in.rows - m) {
    case 3: Tile<3, NB>(xr, in.stride, w, w_stride, scales, k, o, out_stride, accumulate); break;
    case 2: Tile<2, NB>(xr, in.stride, w, w_stride, scales, k, o, out_stride, accumulate); break;
    case 1: Tile<1, NB>(xr, in.stride, w, w_stride, scales, k, o, out_stride, accumulate); break;
    default: break;
  }
}

// out[:, first:last] += bias[first:last] (bias: [1, N] or null), inside the chunk that computed those columns.
void AddBias(const float* bias, const DeviceMatrix& out, int64_t first, int64_t last) {
  if (bias == nullptr) return;
  for (int64_t r = 0; r < out.rows; ++r) {
    float* y = out.As<float>() + r * out.stride;
    for (int64_t c = first; c < last; ++c) y[c] += bias[c];
  }
}

template <typename W>
void SmallRowsLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias, const DeviceMatrix& out,
                     bool accumulate, cpu::ThreadTeam& team) {
  const int64_t n = weight.rows;
  const int64_t tiles = (n + kFeatureTile - 1) / kFeatureTile;
  // About kChunksPerThread chunks per thread, handed out dynamically (see ThreadTeam::ForChunks).
  team.ForChunks(tiles, tiles / (int64_t{team.threads()} * kChunksPerThread), [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t j0 = t * kFeatureTile;
      const W* w = weight.As<W>() + j0 * weight.stride;
      float* o = out.As<float>() + j0;
      const float* scales = weight.row_scales;
      if (j0 + kFeatureTile <= n) {
        AllRows<kFeatureTile>(in, w, weight.stride, scales != nullptr ? scales + j0 : nullptr, o, out.stride, accumulate);
      } else {
        for (int64_t j = j0; j < n; ++j) {
          AllRows<1>(in, weight.As<W>() + j * weight.stride, weight.stride, scales != nullptr ? scales + j : nullptr,
                     out.As<float>() + j, out.stride, accumulate);
        }
      }
    }
    AddBias(bias, out, first * kFeatureTile, std::min(n, last * kFeatureTile));
  });
}

void LargeRowsLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias, const DeviceMatrix& out,
                     bool accumulate, cpu::ThreadTeam& team) {
  const int64_t n = weight.rows;
  // Column blocks of at least kMinGemmColumns (smaller GEMM calls lose more to packing than balance gains).
  const int64_t grain = std::max(kMinGemmColumns, n / (int64_t{team.threads()} * kChunksPerThread));
  team.ForChunks(n, grain, [&](int64_t first, int64_t last) {
    // out[:, b:e] (m x cols) = in (m x k) . W[b:e]^T (k x cols)
    auto gemm = [&](const float* w, int64_t w_stride, int64_t b, int64_t e) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(in.rows), static_cast<blasint>(e - b),
                  static_cast<blasint>(in.cols), 1.0f, in.As<float>(), static_cast<blasint>(in.stride), w,
                  static_cast<blasint>(w_stride), accumulate ? 1.0f : 0.0f, out.As<float>() + b, static_cast<blasint>(out.stride));
    };
    if (weight.dtype == DType::kF32) {
      gemm(weight.As<float>() + first * weight.stride, weight.stride, first, last);
    } else {
      // f16 / bf16 / int8: kWidenedRows weight rows at a time widened (and scaled) into this thread's buffer ([kWidenedRows, k],
      // at most 8 MiB for k = 8192), each block one GEMM: an LM head's chunk of thousands of rows never
      // becomes a float32 copy.
      thread_local std::vector<float> widened;
      widened.resize(static_cast<size_t>(std::min(kWidenedRows, last - first) * weight.cols));
      for (int64_t b = first; b < last; b += kWidenedRows) {
        const int64_t e = std::min(last, b + kWidenedRows);
        if (weight.dtype == DType::kBF16) {
          WidenRows<BFloat16Bits>(weight, b, e, widened.data());
        } else if (weight.dtype == DType::kI8) {
          WidenRows<int8_t>(weight, b, e, widened.data());
        } else {
          WidenRows<HalfBits>(weight, b, e, widened.data());
        }
        gemm(widened.data(), weight.cols, b, e);
      }
    }
    AddBias(bias, out, first, last);
  });
}

}  // namespace

void CpuBackend::LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                        const DeviceMatrix& out, bool accumulate) {
  if (in.rows == 0) return;
  const float* b = bias.data != nullptr ? bias.As<float>() : nullptr;
  if (in.rows <= kSmallRows) {
    switch (weight.dtype) {
      case DType::kBF16: SmallRowsLinear<BFloat16Bits>(in, weight, b, out, accumulate, team_); break;
      case DType::kF16: SmallRowsLinear<HalfBits>(in, weight, b, out, accumulate, team_); break;
      case DType::kI8: SmallRowsLinear<int8_t>(in, weight, b, out, accumulate, team_); break;
      default: SmallRowsLinear<float>(in, weight, b, out, accumulate, team_); break;
    }
  } else {
    LargeRowsLinear(in, weight, b, out, accumulate, team_);
  }
}

}  // namespace arach
