// int8 GEMMs on AMX tiles (Intel Sapphire Rapids and later): one tdpbssd multiplies a 16 x 64 tile of int8 codes
// by a 64 x 16 one into 16 x 16 exact int32 sums, 16 times the products of an AVX512-VNNI vpdpbusd. The CPU
// backend uses it for int8 weight matrices once a call has enough rows to fill the tiles (prefill, batched
// decode); the arithmetic is the VNNI kernels' (activations quantized per row with QuantizeRowInt8, exact
// integer dot products, then the two scales), so either path gives the same floats.
#pragma once

#include <string>

#include "engine/backend/cpu/cpu_parallel.h"
#include "engine/backend/device_matrix.h"

namespace arach::cpu {

// Whether this process can run AMX int8 tiles, and why not: the build must target them (-mamx-int8 -mamx-tile,
// as -march=native does on such a CPU), the CPU must have them, and Linux must grant the process the tile
// state (arch_prctl ARCH_REQ_XCOMP_PERM, asked for here: it is per process and never taken back).
struct AmxSupport {
  bool available = false;
  std::string reason;  // e.g. "AMX int8 tiles" or "no AMX: built without -mamx-int8"
};
AmxSupport RequestAmxInt8();

// Rows from which a call takes the tiles (below, the VNNI kernels: a tile of 16 tokens would be mostly padding,
// and a decode step is bound by streaming the weights, which both do alike).
inline constexpr int64_t kAmxMinRows = 4;
// Whether the tiles can run this product: the tile rows read whole 64-byte column blocks of the weight rows.
inline bool AmxInt8Fits(const DeviceMatrix& in) { return in.rows >= kAmxMinRows && in.cols % 64 == 0; }

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)
#define ARACH_AMX_INT8 1
// out (+)= in . weight^T without bias: in [m, k] float32, weight [n, k] int8 with row_scales, out [m, n] float32;
// each row of `in` quantized per row (QuantizeRowInt8). Needs RequestAmxInt8().available and AmxInt8Fits(in).
void AmxInt8Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& out, bool accumulate,
                   ThreadTeam& team);
#endif

}  // namespace arach::cpu
