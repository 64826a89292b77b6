// Linear layers on CPU, float32, f16, bf16 or int8 weights.
// - float weights, few rows (decode): register-tiled kernels that stream each weight row once, parallel over output
//   features, narrow weights widened to float32 in registers (one conversion per vector); many rows (prefill):
//   OpenBLAS sgemm, one single-threaded call per thread on a slice of the output features (the weights are never
//   repacked twice; narrow slices are widened into a per-thread float32 buffer first, a pass that the GEMM's M rows
//   amortise).
// - int8 weights, any number of rows: the activations are quantized per row on the fly (one scale, as W8A8 kernels
//   do) and meet the codes in exact integer dot products, then the two scales: on AMX tiles from kAmxMinRows rows
//   where the CPU, build and kernel allow (cpu_amx.h), else AVX512-VNNI's vpdpbusd where the build targets
//   it, else a portable integer loop.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "engine/backend/cpu/cpu_amx.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/cpu/half_elements.h"

// GCC 12's AVX-512 headers build masked intrinsics on a deliberately undefined vector and then warn that it may be
// used uninitialized (GCC bug 105593, fixed in GCC 13): the warning is about the header, not this file.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

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

// Weight rows [first, last) widened to float32 into `dst` ([last - first, cols]).
template <typename W>
void WidenRows(const DeviceMatrix& weight, int64_t first, int64_t last, float* dst) {
  const int64_t cols = weight.cols;
  for (int64_t j = first; j < last; ++j) {
    const W* src = weight.As<W>() + j * weight.stride;
    float* out = dst + (j - first) * cols;
    int64_t c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      const VecF v = LoadVec(src + c);
      std::memcpy(out + c, &v, sizeof(v));
    }
    for (; c < cols; ++c) out[c] = Widen(src[c]);
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

// The decode kernels read NB weight rows side by side, rows only a few KiB long at 1-2 bytes per weight: too
// short for the hardware prefetchers to ramp up on. Each load also prefetches the same columns kPrefetchTiles
// tiles ahead (measured on the llama/1b preset: int8 batch-1 steps 75 -> 60 ms; 1 or 2 tiles alike, 4 slower).
constexpr int64_t kPrefetchTiles = 2;
template <int NB, typename W>
inline void PrefetchAhead(const W* at, int64_t w_stride) {
  _mm_prefetch(reinterpret_cast<const char*>(at + kPrefetchTiles * NB * w_stride), _MM_HINT_T0);
}
// Rows at or below this count use the tiled kernel instead of sgemm.
constexpr int64_t kSmallRows = 12;
// Output features per task of the tiled kernel.
constexpr int64_t kFeatureTile = 4;
constexpr int64_t kMinGemmColumns = 128;   // columns of one BLAS call at least
constexpr int64_t kWidenedRows = 256;      // half-width weight rows widened to float32 per GEMM call

// out[i][j] (+)= sum_k x[i][k] * w[j][k] for i < MB, j < NB; W: float or half-width float elements.
template <int MB, int NB, typename W>
inline void Tile(const float* x, int64_t x_stride, const W* w, int64_t w_stride, int64_t k_size, float* out,
                 int64_t out_stride, bool accumulate, bool prefetch_next) {
  VecF acc[MB][NB] = {};
  int64_t k = 0;
  for (; k + kLanes <= k_size; k += kLanes) {
    VecF wv[NB];
    for (int j = 0; j < NB; ++j) {
      if (prefetch_next) PrefetchAhead<NB>(w + j * w_stride + k, w_stride);
      wv[j] = LoadVec(w + j * w_stride + k);
    }
    for (int i = 0; i < MB; ++i) {
      const VecF xv = LoadVec(x + i * x_stride + k);
      for (int j = 0; j < NB; ++j) acc[i][j] += xv * wv[j];
    }
  }
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      float sum = SumLanes(acc[i][j]);
      for (int64_t kk = k; kk < k_size; ++kk) sum += x[i * x_stride + kk] * Widen(w[j * w_stride + kk]);
      float& o = out[i * out_stride + j];
      o = accumulate ? o + sum : sum;
    }
  }
}

// Rows [0, rows) in tiles of 4, then one tile of the 1-3 left: tile(m, std::integral_constant<int, MB>{}) computes
// rows [m, m + MB). The tile at row 0 is the one that prefetches the weight rows ahead (the others reread them).
template <typename TileFn>
void ForRowTiles(int64_t rows, const TileFn& tile) {
  int64_t m = 0;
  for (; m + 4 <= rows; m += 4) tile(m, std::integral_constant<int, 4>{});
  switch (rows - m) {
    case 3: tile(m, std::integral_constant<int, 3>{}); break;
    case 2: tile(m, std::integral_constant<int, 2>{}); break;
    case 1: tile(m, std::integral_constant<int, 1>{}); break;
    default: break;
  }
}

// All rows of x against NB consecutive weight rows.
template <int NB, typename W>
void AllRows(const DeviceMatrix& in, const W* w, int64_t w_stride, float* out, int64_t out_stride, bool accumulate) {
  ForRowTiles(in.rows, [&](int64_t m, auto rows) {
    Tile<decltype(rows)::value, NB>(in.As<float>() + m * in.stride, in.stride, w, w_stride, in.cols, out + m * out_stride,
                                    out_stride, accumulate, m == 0);
  });
}

// Rows quantized for the int8 dot products (QuantizeRowInt8, one scale per row), stored as unsigned codes + 128 in
// [1, 255], as vpdpbusd's first operand must be (the offset is taken back out in Int8Tile). A row holding an inf
// or a nan has a nan scale, so its outputs are nan.
struct QuantizedRows {
  std::vector<uint8_t> codes;  // [rows, cols]
  std::vector<float> scales;   // [rows]
  int64_t cols = 0;
};

void QuantizeActivations(const DeviceMatrix& in, QuantizedRows& q) {
  q.cols = in.cols;
  q.codes.resize(static_cast<size_t>(in.rows * in.cols));
  q.scales.resize(static_cast<size_t>(in.rows));
  for (int64_t r = 0; r < in.rows; ++r) {
    uint8_t* codes = q.codes.data() + r * in.cols;
    q.scales[r] = QuantizeRowInt8(in.As<float>() + r * in.stride, in.cols, reinterpret_cast<int8_t*>(codes));
    for (int64_t c = 0; c < in.cols; ++c) codes[c] ^= 0x80;  // two's complement code v -> v + 128
  }
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// Lane i of the result holds the sum of the 16 int32 lanes of v[i], for i < N <= 16: a transposing reduction
// (pairs of vectors interleaved and added, then pairs of 64-bit, then of 128-bit lanes), 3 instructions per pair
// and level where reducing each vector alone takes ~8; a vector left without a partner pairs with itself.
template <int N>
inline __m512i SumEachVector(const __m512i* v) {
  static_assert(N >= 1 && N <= 16);
  __m512i level[16];
  int count = 1;
  while (count < N) count *= 2;
  for (int i = 0; i < count; ++i) level[i] = i < N ? v[i] : _mm512_setzero_si512();
  auto reduce = [&](auto combine) {
    if (count == 1) {
      level[0] = combine(level[0], level[0]);
      return;
    }
    for (int i = 0; i < count / 2; ++i) level[i] = combine(level[2 * i], level[2 * i + 1]);
    count /= 2;
  };
  reduce([](__m512i a, __m512i b) { return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b)); });
  reduce([](__m512i a, __m512i b) { return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)); });
  for (int twice = 0; twice < 2; ++twice) {
    reduce([](__m512i a, __m512i b) {
      return _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xDD));
    });
  }
  return level[0];
}

// Masked byte loads read the last partial 64 columns without touching memory past the row.
inline __mmask64 ColumnMask(int64_t k, int64_t k_size) {
  return k + 64 <= k_size ? ~__mmask64{0} : (__mmask64{1} << (k_size - k)) - 1;
}
#endif

// out[i][j] (+)= x_scales[i] * w_scales[j] * (sum_k xq[i][k] * w[j][k] - w_offsets[j]) for i < MB, j < NB, with
// xq the codes + 128 (so the difference is sum_k (xq[i][k] - 128) * w[j][k]), exact in int32 (the u8 x s8 sums
// stay within 255 * 127 * k: no overflow below k = 66,000 columns). w_offsets[j] = 128 * sum_k w[j][k] is what
// the +128 adds: the first row tile of a call (kFirstTile) computes it in the same loop, which is also the one
// that streams the weight rows from memory (prefetching kPrefetchTiles tiles ahead), and stores it for the
// other row tiles, which find the weight rows in L1.
template <int MB, int NB, bool kFirstTile>
inline void Int8Tile(const uint8_t* xq, int64_t xq_stride, const float* x_scales, const int8_t* w, int64_t w_stride,
                     const float* w_scales, int32_t* w_offsets, int64_t k_size, float* out, int64_t out_stride,
                     bool accumulate) {
  int32_t dots[MB * NB];  // [MB, NB]
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  // Each vpdpbusd adds four adjacent u8 * s8 products into each of 16 int32 lanes.
  __m512i acc[MB * NB];
  __m512i offsets[NB];
  for (int t = 0; t < MB * NB; ++t) acc[t] = _mm512_setzero_si512();
  for (int j = 0; j < NB; ++j) offsets[j] = _mm512_setzero_si512();
  const __m512i all_128 = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t k = 0; k < k_size; k += 64) {
    const __mmask64 mask = ColumnMask(k, k_size);
    __m512i wv[NB];
    for (int j = 0; j < NB; ++j) {
      if constexpr (kFirstTile) PrefetchAhead<NB>(w + j * w_stride + k, w_stride);
      wv[j] = _mm512_maskz_loadu_epi8(mask, w + j * w_stride + k);
      if constexpr (kFirstTile) offsets[j] = _mm512_dpbusd_epi32(offsets[j], all_128, wv[j]);
    }
    for (int i = 0; i < MB; ++i) {
      const __m512i xv = _mm512_maskz_loadu_epi8(mask, xq + i * xq_stride + k);
      for (int j = 0; j < NB; ++j) acc[i * NB + j] = _mm512_dpbusd_epi32(acc[i * NB + j], xv, wv[j]);
    }
  }
  _mm512_mask_storeu_epi32(dots, static_cast<__mmask16>((1u << (MB * NB)) - 1), SumEachVector<MB * NB>(acc));
  if constexpr (kFirstTile) {
    _mm512_mask_storeu_epi32(w_offsets, static_cast<__mmask16>((1u << NB) - 1), SumEachVector<NB>(offsets));
  }
#else
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < k_size; ++k) sum += int32_t{xq[i * xq_stride + k]} * int32_t{w[j * w_stride + k]};
      dots[i * NB + j] = sum;
    }
  }
  if constexpr (kFirstTile) {
    for (int j = 0; j < NB; ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < k_size; ++k) sum += w[j * w_stride + k];
      w_offsets[j] = 128 * sum;
    }
  }
#endif
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      const float value = static_cast<float>(dots[i * NB + j] - w_offsets[j]) * x_scales[i] * w_scales[j];
      float& o = out[i * out_stride + j];
      o = accumulate ? o + value : value;
    }
  }
}

// All quantized rows against NB consecutive int8 weight rows.
template <int NB>
void Int8AllRows(const QuantizedRows& q, const int8_t* w, int64_t w_stride, const float* w_scales, float* out,
                 int64_t out_stride, bool accumulate) {
  const int64_t k = q.cols;
  int32_t offsets[NB];  // 128 * sum_k w[j][k], from the first row tile
  ForRowTiles(static_cast<int64_t>(q.scales.size()), [&](int64_t m, auto rows) {
    constexpr int kRows = decltype(rows)::value;
    const uint8_t* xq = q.codes.data() + m * k;
    if (m == 0) {
      Int8Tile<kRows, NB, true>(xq, k, q.scales.data(), w, w_stride, w_scales, offsets, k, out, out_stride, accumulate);
    } else {
      Int8Tile<kRows, NB, false>(xq, k, q.scales.data() + m, w, w_stride, w_scales, offsets, k, out + m * out_stride,
                                 out_stride, accumulate);
    }
  });
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define ARACH_BF16_SPLIT_LANES 1
// bf16 weights without shuffles: one 64-byte load holds 32 weights, two per 32-bit lane; shifting each lane left
// by 16 turns its low half (the even-indexed weight) into a float32, masking off its low half leaves the odd one.
// The activations are rearranged to match once per call: each 32 columns of a row as their 16 even-indexed
// values, then their 16 odd-indexed ones, zeros past the last column.
struct SplitRows {
  std::vector<float> values;  // [rows, blocks * 32]
  int64_t rows = 0, blocks = 0;
};

void SplitActivations(const DeviceMatrix& in, SplitRows& split) {
  split.rows = in.rows;
  split.blocks = (in.cols + 31) / 32;
  split.values.assign(static_cast<size_t>(split.rows * split.blocks * 32), 0.0f);
  for (int64_t r = 0; r < in.rows; ++r) {
    const float* x = in.As<float>() + r * in.stride;
    float* out = split.values.data() + r * split.blocks * 32;
    for (int64_t c = 0; c < in.cols; ++c) out[c / 32 * 32 + (c % 2) * 16 + (c % 32) / 2] = x[c];
  }
}

// out[i][j] (+)= sum_k x[i][k] * w[j][k] for i < MB, j < NB, x as SplitRows lays it out.
template <int MB, int NB>
inline void BFloat16Tile(const float* x, int64_t x_stride, const BFloat16Bits* w, int64_t w_stride, int64_t k_size,
                         float* out, int64_t out_stride, bool accumulate, bool prefetch_next) {
  __m512 acc[MB][NB];
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  const __m512i high_halves = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t k = 0; k < k_size; k += 32) {
    const __mmask32 mask = k + 32 <= k_size ? ~__mmask32{0} : (__mmask32{1} << (k_size - k)) - 1;
    __m512 even[NB], odd[NB];
    for (int j = 0; j < NB; ++j) {
      if (prefetch_next) PrefetchAhead<NB>(w + j * w_stride + k, w_stride);
      const __m512i pairs = _mm512_maskz_loadu_epi16(mask, w + j * w_stride + k);
      even[j] = _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16));
      odd[j] = _mm512_castsi512_ps(_mm512_and_si512(pairs, high_halves));
    }
    for (int i = 0; i < MB; ++i) {
      const __m512 x_even = _mm512_loadu_ps(x + i * x_stride + k);
      const __m512 x_odd = _mm512_loadu_ps(x + i * x_stride + k + 16);
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(x_odd, odd[j], _mm512_fmadd_ps(x_even, even[j], acc[i][j]));
    }
  }
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      VecF lanes;
      std::memcpy(&lanes, &acc[i][j], sizeof(lanes));
      const float sum = SumLanes(lanes);
      float& o = out[i * out_stride + j];
      o = accumulate ? o + sum : sum;
    }
  }
}

// All split rows against NB consecutive bf16 weight rows.
template <int NB>
void BFloat16AllRows(const SplitRows& split, int64_t k, const BFloat16Bits* w, int64_t w_stride, float* out,
                     int64_t out_stride, bool accumulate) {
  const int64_t stride = split.blocks * 32;
  ForRowTiles(split.rows, [&](int64_t m, auto rows) {
    BFloat16Tile<decltype(rows)::value, NB>(split.values.data() + m * stride, stride, w, w_stride, k,
                                            out + m * out_stride, out_stride, accumulate, m == 0);
  });
}
#endif  // __AVX512F__ && __AVX512BW__

// out[:, first:last] += bias[first:last] (bias: [1, N] or null), inside the chunk that computed those columns.
void AddBias(const float* bias, const DeviceMatrix& out, int64_t first, int64_t last) {
  if (bias == nullptr) return;
  for (int64_t r = 0; r < out.rows; ++r) {
    float* y = out.As<float>() + r * out.stride;
    for (int64_t c = first; c < last; ++c) y[c] += bias[c];
  }
}

// Output features [0, n) in tiles of kFeatureTile, about cpu::kChunksPerThread chunks per thread handed out
// dynamically (see ThreadTeam::ForChunks); tile(j, std::integral_constant<int, NB>{}) computes features
// [j, j + NB) of every row, NB = kFeatureTile or, for the last features, 1. The bias joins in the same chunk.
template <typename TileFn>
void ForFeatureTiles(int64_t n, const float* bias, const DeviceMatrix& out, cpu::ThreadTeam& team, const TileFn& tile) {
  const int64_t tiles = (n + kFeatureTile - 1) / kFeatureTile;
  team.ForChunks(tiles, tiles / (int64_t{team.threads()} * cpu::kChunksPerThread), [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t j0 = t * kFeatureTile;
      if (j0 + kFeatureTile <= n) {
        tile(j0, std::integral_constant<int, kFeatureTile>{});
      } else {
        for (int64_t j = j0; j < n; ++j) tile(j, std::integral_constant<int, 1>{});
      }
    }
    AddBias(bias, out, first * kFeatureTile, std::min(n, last * kFeatureTile));
  });
}

template <typename W>
void SmallRowsLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias, const DeviceMatrix& out,
                     bool accumulate, cpu::ThreadTeam& team) {
  ForFeatureTiles(weight.rows, bias, out, team, [&](int64_t j, auto features) {
    AllRows<decltype(features)::value>(in, weight.As<W>() + j * weight.stride, weight.stride, out.As<float>() + j,
                                       out.stride, accumulate);
  });
}

#if defined(ARACH_BF16_SPLIT_LANES)
void BFloat16SmallRowsLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias,
                             const DeviceMatrix& out, bool accumulate, cpu::ThreadTeam& team) {
  thread_local SplitRows calling_threads_rows;  // named through a reference, as in Int8Linear
  SplitRows& split = calling_threads_rows;
  SplitActivations(in, split);
  ForFeatureTiles(weight.rows, bias, out, team, [&](int64_t j, auto features) {
    BFloat16AllRows<decltype(features)::value>(split, in.cols, weight.As<BFloat16Bits>() + j * weight.stride,
                                               weight.stride, out.As<float>() + j, out.stride, accumulate);
  });
}
#endif

void Int8Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias, const DeviceMatrix& out,
                bool accumulate, bool amx, cpu::ThreadTeam& team) {
#if defined(ARACH_AMX_INT8)
  if (amx && cpu::AmxInt8Fits(in)) {
    cpu::AmxInt8Linear(in, weight, out, accumulate, team);
    AddBias(bias, out, 0, weight.rows);
    return;
  }
#endif
  // The calling thread's buffer, named through a reference: a lambda does not capture a thread_local, so the team's
  // threads would see their own (empty) copy under its name.
  thread_local QuantizedRows calling_threads_rows;
  QuantizedRows& quantized = calling_threads_rows;
  QuantizeActivations(in, quantized);
  ForFeatureTiles(weight.rows, bias, out, team, [&](int64_t j, auto features) {
    Int8AllRows<decltype(features)::value>(quantized, weight.As<int8_t>() + j * weight.stride, weight.stride,
                                           weight.row_scales + j, out.As<float>() + j, out.stride, accumulate);
  });
}

void LargeRowsLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const float* bias, const DeviceMatrix& out,
                     bool accumulate, cpu::ThreadTeam& team) {
  const int64_t n = weight.rows;
  // Column blocks of at least kMinGemmColumns (smaller GEMM calls lose more to packing than balance gains).
  const int64_t grain = std::max(kMinGemmColumns, n / (int64_t{team.threads()} * cpu::kChunksPerThread));
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
      // f16 / bf16: kWidenedRows weight rows at a time widened into this thread's buffer ([kWidenedRows, k],
      // at most 8 MiB for k = 8192), each block one GEMM: an LM head's chunk of thousands of rows never
      // becomes a float32 copy.
      thread_local std::vector<float> widened;
      widened.resize(static_cast<size_t>(std::min(kWidenedRows, last - first) * weight.cols));
      for (int64_t b = first; b < last; b += kWidenedRows) {
        const int64_t e = std::min(last, b + kWidenedRows);
        if (weight.dtype == DType::kBF16) {
          WidenRows<BFloat16Bits>(weight, b, e, widened.data());
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
  if (weight.dtype == DType::kI8) {
    Int8Linear(in, weight, b, out, accumulate, amx_.int8, team_);
#if defined(ARACH_AMX_BF16)
  } else if (weight.dtype == DType::kBF16 && amx_.bf16 && cpu::AmxBf16Fits(in)) {
    cpu::AmxBf16Linear(in, weight, out, accumulate, team_);
    AddBias(b, out, 0, weight.rows);
#endif
  } else if (in.rows <= kSmallRows) {
    switch (weight.dtype) {
#if defined(ARACH_BF16_SPLIT_LANES)
      case DType::kBF16: BFloat16SmallRowsLinear(in, weight, b, out, accumulate, team_); break;
#else
      case DType::kBF16: SmallRowsLinear<BFloat16Bits>(in, weight, b, out, accumulate, team_); break;
#endif
      case DType::kF16: SmallRowsLinear<HalfBits>(in, weight, b, out, accumulate, team_); break;
      default: SmallRowsLinear<float>(in, weight, b, out, accumulate, team_); break;
    }
  } else {
    LargeRowsLinear(in, weight, b, out, accumulate, team_);
  }
}

}  // namespace arach
