// GEMMs on AMX tiles (Intel Sapphire Rapids and later), for int8 and bf16 weight matrices once a call has
// enough rows to fill the tiles (prefill, batched decode).
// int8: one tdpbssd multiplies a 16 x 64 tile of int8 codes by a 64 x 16 one into 16 x 16 exact int32 sums, 16
// times the products of an AVX512-VNNI vpdpbusd; the arithmetic is the VNNI kernels' (activations quantized per
// row with QuantizeRowInt8, exact integer dot products, then the two scales), so either path gives the same floats.
// bf16: one tdpbf16ps multiplies 16 x 32 bf16 weights by 32 x 16 bf16 activations into float32 sums. Each
// float32 activation is split into two bf16 parts, x = hi + lo (hi = x rounded, lo = the rest rounded: within
// 2^-17 of x), and both parts are multiplied, so the result keeps float32 activations' accuracy (activations
// rounded to bf16 alone moved the fixtures' logits past the bf16 weights' 0.1 bound).
#pragma once

#include <string>

#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/device_matrix.h"

namespace arach::cpu {

// Whether this process can run AMX tiles of each kind, and why not: the build must target them (-mamx-tile
// -mamx-int8 -mamx-bf16, as -march=native does on such a CPU), the CPU must have them, and Linux must grant the
// process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM, asked for here: it is per process and never taken back).
struct AmxSupport {
  bool int8 = false;
  bool bf16 = false;
  std::string reason;  // e.g. "AMX int8 and bf16 tiles" or "no AMX: built without -mamx-tile"
};
AmxSupport RequestAmx();

// Rows from which a call takes the tiles (below, the VNNI kernels: a tile of 16 tokens would be mostly padding,
// and a decode step is bound by streaming the weights, which both do alike).
inline constexpr int64_t kAmxMinRows = 4;
// Whether the tiles can run this product: the tile rows read whole 64-byte column blocks of the weight rows.
inline bool AmxInt8Fits(const DeviceMatrix& in) { return in.rows >= kAmxMinRows && in.cols % 64 == 0; }
inline bool AmxBf16Fits(const DeviceMatrix& in) { return in.rows >= kAmxMinRows && in.cols % 32 == 0; }

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)
#define ARACH_AMX_INT8 1
// out (+)= in . weight^T without bias: in [m, k] float32, weight [n, k] int8 with row_scales, out [m, n] float32;
// each row of `in` quantized per row (QuantizeRowInt8). Needs RequestAmx().int8 and AmxInt8Fits(in).
void AmxInt8Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out, bool accumulate,
                   ThreadTeam& team);
#endif
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512F__)
#define ARACH_AMX_BF16 1
// out (+)= in . weight^T without bias: in [m, k] float32 (split into two bf16 parts), weight [n, k] bf16, out
// [m, n] float32. Needs RequestAmx().bf16 and AmxBf16Fits(in).
void AmxBf16Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out, bool accumulate,
                   ThreadTeam& team);
#endif

}  // namespace arach::cpu
