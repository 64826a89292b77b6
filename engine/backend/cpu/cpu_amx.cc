#include "engine/backend/cpu/cpu_amx.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/core/dtype.h"

// GCC 12's AVX-512 headers warn about their own masked intrinsics (GCC bug 105593; see cpu_linear.cc).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace arach::cpu {

#if defined(ARACH_AMX_INT8) || defined(ARACH_AMX_BF16)
namespace {

// The tile registers' shapes (palette 1), the same for both kinds: 16 rows of 64 bytes each.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

void LoadTileConfig() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  _tile_loadconfig(&config);
}

// Runs `block(first_row, rows, w, w_stride)` over `weight`'s rows in blocks of `block_rows` on the team, with the
// tiles configured on each thread; the last, partial block is copied beside zero rows so that no tile reads past
// the matrix. `Element`: the weight's element type; w_stride in elements.
template <typename Element, typename BlockFn>
void ForWeightBlocks(const DeviceMatrix& weight, int64_t block_rows, ThreadTeam& team, const BlockFn& block) {
  const int64_t n = weight.rows, k = weight.cols;
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  team.ForChunks(blocks, blocks / (int64_t{team.threads()} * kChunksPerThread), [&](int64_t first, int64_t last) {
    LoadTileConfig();
    for (int64_t b = first; b < last; ++b) {
      const int64_t j0 = b * block_rows, rows = std::min(block_rows, n - j0);
      const Element* w = weight.As<Element>() + j0 * weight.stride;
      int64_t w_stride = weight.stride;
      thread_local std::vector<Element> last_rows;
      if (rows < block_rows) {
        last_rows.assign(static_cast<size_t>(block_rows * k), Element{});
        for (int64_t j = 0; j < rows; ++j) std::memcpy(last_rows.data() + j * k, w + j * weight.stride, k * sizeof(Element));
        w = last_rows.data();
        w_stride = k;
      }
      block(j0, rows, w, w_stride);
    }
    _tile_release();
  });
}

}  // namespace
#endif

#if defined(ARACH_AMX_INT8)
namespace {

constexpr int64_t kTileBytes = 64;      // columns of k per tile row (int8), and bytes per row of every tile
constexpr int64_t kTileRows = 16;       // rows of a tile: 16 weight rows (A) or 16 groups of 4 columns (B)
constexpr int64_t kFeatureBlock = 32;   // weight rows per block: two A tiles
constexpr int64_t kTokenBlock = 32;     // activation rows per block: two B tiles

// Tiles 0-1 A (16 weight rows x 64 codes), 2-3 B (16 groups of 4 columns x 16 tokens x 4 codes), 4-7 C (16
// weight rows x 16 tokens of int32).

// Activation rows quantized (QuantizeRowInt8) and laid out as B tiles want them: per 16 rows, per 4 columns,
// the 16 rows' 4 codes side by side. Rows past the last are zeros (their outputs are not written).
struct PackedRows {
  std::vector<int8_t> codes;  // [padded / 16, k / 4, 16, 4]
  std::vector<float> scales;  // [rows]
  std::vector<int8_t> row;    // [k]: one row's codes before packing
  int64_t rows = 0, padded = 0, k = 0;
};

void PackRows(const DeviceMatrix& in, PackedRows& p) {
  p.rows = in.rows;
  p.k = in.cols;
  p.padded = (in.rows + kTokenBlock - 1) / kTokenBlock * kTokenBlock;
  p.codes.assign(static_cast<size_t>(p.padded * p.k), 0);
  p.scales.resize(static_cast<size_t>(p.rows));
  p.row.resize(static_cast<size_t>(p.k));
  for (int64_t r = 0; r < p.rows; ++r) {
    p.scales[r] = QuantizeRowInt8(in.As<float>() + r * in.stride, p.k, p.row.data());
    int8_t* group = p.codes.data() + (r / kTileRows) * kTileRows * p.k + (r % kTileRows) * 4;
    for (int64_t c = 0; c < p.k; c += 4, group += kTileRows * 4) std::memcpy(group, p.row.data() + c, 4);
  }
}

// out[t][j] (+)= dots[j][t] * x_scales[t] * w_scales[j] for the `tokens` rows and `features` columns of one
// 16 x 16 C tile stored as dots [16 features, 16 tokens].
void WriteTile(const int32_t* dots, int64_t tokens, int64_t features, const float* x_scales, const float* w_scales,
               float* out, int64_t out_stride, bool accumulate) {
  const __mmask16 valid = static_cast<__mmask16>((1u << features) - 1);
  const __m512 w_scale = _mm512_maskz_loadu_ps(valid, w_scales);
  const __m512i column = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(16));
  for (int64_t t = 0; t < tokens; ++t) {
    // Token t's 16 features: column t of the tile.
    const __m512i dot = _mm512_i32gather_epi32(_mm512_add_epi32(column, _mm512_set1_epi32(static_cast<int>(t))), dots, 4);
    // The VNNI kernels' order: (dot * x_scale) * w_scale.
    __m512 value = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(x_scales[t])), w_scale);
    float* o = out + t * out_stride;
    if (accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(valid, o), value);
    _mm512_mask_storeu_ps(o, valid, value);
  }
}

// One block of kFeatureBlock weight rows `w` (row stride `w_stride`; `features` of them are real) against every
// packed row.
void FeatureBlock(const PackedRows& p, const int8_t* w, int64_t w_stride, const float* w_scales, int64_t features,
                  float* out, int64_t out_stride, bool accumulate) {
  alignas(64) int32_t dots[4][kTileRows * kTileRows];  // C tiles 4-7: [16 features, 16 tokens] each
  const int64_t steps = p.k / kTileBytes;
  for (int64_t t0 = 0; t0 < p.padded; t0 += kTokenBlock) {
    const int8_t* b0 = p.codes.data() + t0 * p.k;  // rows t0..t0+15 (B tile 2), then t0+16..t0+31 (B tile 3)
    const int8_t* b1 = b0 + kTileRows * p.k;
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    const bool second_half = t0 + kTileRows < p.rows;  // B tile 3 holds real rows (not so in a batch of <= 16)
    for (int64_t s = 0; s < steps; ++s) {
      _tile_loadd(0, w + s * kTileBytes, w_stride);
      _tile_loadd(1, w + kTileRows * w_stride + s * kTileBytes, w_stride);
      _tile_loadd(2, b0 + s * kTileRows * kTileBytes, kTileBytes);
      _tile_dpbssd(4, 0, 2);
      _tile_dpbssd(6, 1, 2);
      if (second_half) {
        _tile_loadd(3, b1 + s * kTileRows * kTileBytes, kTileBytes);
        _tile_dpbssd(5, 0, 3);
        _tile_dpbssd(7, 1, 3);
      }
    }
    _tile_stored(4, dots[0], kTileRows * 4);
    _tile_stored(5, dots[1], kTileRows * 4);
    _tile_stored(6, dots[2], kTileRows * 4);
    _tile_stored(7, dots[3], kTileRows * 4);
    for (int f = 0; f < 2; ++f) {
      const int64_t tile_features = std::clamp<int64_t>(features - f * kTileRows, 0, kTileRows);
      if (tile_features == 0) continue;
      for (int t = 0; t < 2; ++t) {
        const int64_t first = t0 + t * kTileRows;
        const int64_t tokens = std::clamp<int64_t>(p.rows - first, 0, kTileRows);
        WriteTile(dots[f * 2 + t], tokens, tile_features, p.scales.data() + first, w_scales + f * kTileRows,
                  out + first * out_stride + f * kTileRows, out_stride, accumulate);
      }
    }
  }
}

}  // namespace

void AmxInt8Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out, bool accumulate,
                   ThreadTeam& team) {
  // The calling thread's rows, named through a reference: a lambda does not capture a thread_local.
  thread_local PackedRows calling_threads_rows;
  PackedRows& packed = calling_threads_rows;
  PackRows(in, packed);
  ForWeightBlocks<int8_t>(weight, kFeatureBlock, team, [&](int64_t j0, int64_t features, const int8_t* w, int64_t w_stride) {
    FeatureBlock(packed, w, w_stride, weight.row_scales + j0, features, out.As<float>() + j0, out.stride, accumulate);
  });
}
#endif  // ARACH_AMX_INT8

#if defined(ARACH_AMX_BF16)
namespace {

// Tiles 0-1 A (16 weight rows x 32 bf16), 2-3 B (16 pairs of columns x 16 tokens x 2 bf16: the high and the low
// parts), 4-7 C (16 weight rows x 16 tokens of float32).
constexpr int64_t kBf16Block = 32;  // weight rows per block (two A tiles) and tokens per block (two halves)
constexpr int64_t kBf16Step = 32;   // columns of k per tile step

// Activation rows split into bf16 high and low parts and laid out as B tiles want them: per 16 rows, per pair of
// columns, the 16 rows' two values side by side. Rows past the last are zeros.
struct SplitPackedRows {
  std::vector<uint16_t> high, low;  // [padded / 16, k / 2, 16, 2] each
  int64_t rows = 0, padded = 0, k = 0;
};

void PackSplitRows(const DeviceMatrix& in, SplitPackedRows& p) {
  p.rows = in.rows;
  p.k = in.cols;
  p.padded = (in.rows + kBf16Block - 1) / kBf16Block * kBf16Block;
  p.high.assign(static_cast<size_t>(p.padded * p.k), 0);
  p.low.assign(static_cast<size_t>(p.padded * p.k), 0);
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = in.As<float>() + r * in.stride;
    const int64_t group = (r / 16) * 16 * p.k + (r % 16) * 2;
    for (int64_t c = 0; c < p.k; ++c) {
      const uint16_t high = FloatToBFloat16(x[c]);
      const size_t at = static_cast<size_t>(group + (c / 2) * 32 + c % 2);
      p.high[at] = high;
      p.low[at] = FloatToBFloat16(x[c] - BFloat16ToFloat(high));
    }
  }
}

// out[t][j] (+)= sums[j][t] for the `tokens` rows and `features` columns of one 16 x 16 C tile [features, tokens].
void WriteFloatTile(const float* sums, int64_t tokens, int64_t features, float* out, int64_t out_stride, bool accumulate) {
  const __mmask16 valid = static_cast<__mmask16>((1u << features) - 1);
  const __m512i column = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(16));
  for (int64_t t = 0; t < tokens; ++t) {
    __m512 value = _mm512_i32gather_ps(_mm512_add_epi32(column, _mm512_set1_epi32(static_cast<int>(t))), sums, 4);
    float* o = out + t * out_stride;
    if (accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(valid, o), value);
    _mm512_mask_storeu_ps(o, valid, value);
  }
}

// One block of kBf16Block weight rows `w` (row stride `w_stride` elements; `features` of them are real) against
// every packed row: per step, each A tile meets the high then the low parts of each half of the tokens.
void Bf16FeatureBlock(const SplitPackedRows& p, const uint16_t* w, int64_t w_stride, int64_t features, float* out,
                      int64_t out_stride, bool accumulate) {
  alignas(64) float sums[4][16 * 16];  // C tiles 4-7: [16 features, 16 tokens] each
  const int64_t steps = p.k / kBf16Step, w_bytes = w_stride * 2;
  for (int64_t t0 = 0; t0 < p.padded; t0 += kBf16Block) {
    const uint16_t* high[2] = {p.high.data() + t0 * p.k, p.high.data() + (t0 + 16) * p.k};
    const uint16_t* low[2] = {p.low.data() + t0 * p.k, p.low.data() + (t0 + 16) * p.k};
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    const bool second_half = t0 + 16 < p.rows;  // the second 16 tokens hold real rows (not so in a batch of <= 16)
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t b_offset = s * 16 * 32;  // 16 pair rows of 32 values per step
      _tile_loadd(0, w + s * kBf16Step, w_bytes);
      _tile_loadd(1, w + 16 * w_stride + s * kBf16Step, w_bytes);
      _tile_loadd(2, high[0] + b_offset, 64);
      _tile_loadd(3, low[0] + b_offset, 64);
      _tile_dpbf16ps(4, 0, 2);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(4, 0, 3);
      _tile_dpbf16ps(6, 1, 3);
      if (second_half) {
        _tile_loadd(2, high[1] + b_offset, 64);
        _tile_loadd(3, low[1] + b_offset, 64);
        _tile_dpbf16ps(5, 0, 2);
        _tile_dpbf16ps(7, 1, 2);
        _tile_dpbf16ps(5, 0, 3);
        _tile_dpbf16ps(7, 1, 3);
      }
    }
    _tile_stored(4, sums[0], 64);
    _tile_stored(5, sums[1], 64);
    _tile_stored(6, sums[2], 64);
    _tile_stored(7, sums[3], 64);
    for (int f = 0; f < 2; ++f) {
      const int64_t tile_features = std::clamp<int64_t>(features - f * 16, 0, 16);
      if (tile_features == 0) continue;
      for (int t = 0; t < 2; ++t) {
        const int64_t first = t0 + t * 16;
        const int64_t tokens = std::clamp<int64_t>(p.rows - first, 0, 16);
        WriteFloatTile(sums[f * 2 + t], tokens, tile_features, out + first * out_stride + f * 16, out_stride, accumulate);
      }
    }
  }
}

}  // namespace

void AmxBf16Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out, bool accumulate,
                   ThreadTeam& team) {
  thread_local SplitPackedRows calling_threads_rows;  // named through a reference: lambdas do not capture it
  SplitPackedRows& packed = calling_threads_rows;
  PackSplitRows(in, packed);
  ForWeightBlocks<uint16_t>(weight, kBf16Block, team, [&](int64_t j0, int64_t features, const uint16_t* w, int64_t w_stride) {
    Bf16FeatureBlock(packed, w, w_stride, features, out.As<float>() + j0, out.stride, accumulate);
  });
}
#endif  // ARACH_AMX_BF16

#if defined(ARACH_AMX_INT8) || defined(ARACH_AMX_BF16)
AmxSupport RequestAmx() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE, bit 25 AMX-INT8.
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1u << 24)) == 0) {
    return {false, false, "no AMX: the CPU has no AMX tiles"};
  }
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // <asm/prctl.h>, <asm/fpu/xstate.h>
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    return {false, false, "no AMX: Linux did not grant this process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM)"};
  }
  AmxSupport support;
#if defined(ARACH_AMX_INT8)
  support.int8 = (edx & (1u << 25)) != 0;
#endif
#if defined(ARACH_AMX_BF16)
  support.bf16 = (edx & (1u << 22)) != 0;
#endif
  support.reason = support.int8 && support.bf16 ? "AMX int8 and bf16 tiles"
                   : support.int8              ? "AMX int8 tiles"
                   : support.bf16              ? "AMX bf16 tiles"
                                               : "no AMX: the CPU lacks the tile kinds this build targets";
  return support;
}

#else  // a build without AMX tiles

AmxSupport RequestAmx() { return {false, false, "no AMX: built without -mamx-tile"}; }

#endif

}  // namespace arach::cpu
