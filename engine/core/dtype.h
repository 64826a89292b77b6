// Element types of stored tensors and the conversions the engine needs between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"

namespace arach {

enum class DType : uint8_t {
  kF32,   // IEEE float32
  kF16,   // IEEE float16
  kBF16,  // bfloat16 (upper half of a float32)
  kI32,   // int32 (metadata only)
  kI64,   // int64 (metadata only)
  kI8,   // int8 weight matrices of the CPU backend (--weight_dtype int8): value = code * the row's scale
  kF8E4M3,  // float8 e4m3 ("fn": 4 exponent bits, bias 7, 3 mantissa bits, no infinities, max 448); FP8
            // checkpoints only: read through engine/model/weight_quantization.h with the tensor's scales
};

// Bytes per element.
size_t DTypeSize(DType dtype);
// Name as safetensors spells it ("F32", "F16", "BF16", "I32", "I64", "F8_E4M3").
absl::string_view DTypeName(DType dtype);
// Parses a safetensors dtype string; unsupported ones (e.g. "F8_E5M2") are an error naming the string.
absl::StatusOr<DType> ParseDType(absl::string_view name);

float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);  // round to nearest even
inline float BFloat16ToFloat(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
}
uint16_t FloatToBFloat16(float value);  // round to nearest even
// Quantizes one row `x` ([cols]) to int8 codes with one scale, which it returns: scale = max |x| / 127 (1 for an
// all-zero row), code = round(x / scale) (to nearest, ties away from zero), in [-127, 127]. A row holding an inf
// or a nan gets a nan scale and zero codes, so whatever it multiplies comes out nan, as in float arithmetic.
float QuantizeRowInt8(const float* x, int64_t cols, int8_t* codes);
// QuantizeRowInt8 on each row of `src` ([rows, cols]): codes [rows, cols], scales [rows].
void QuantizeRowsInt8(const float* src, int64_t rows, int64_t cols, int8_t* codes, float* scales);

// An e4m3fn byte as float32 (exact; 0x7f and 0xff are NaN).
float Float8E4M3ToFloat(uint8_t bits);

// Converts `count` elements of `dtype` at `src` to float32 at `dst`. `dtype` must be F32, F16, BF16 or I8 (the
// codes themselves: a row's scale is the caller's).
void ConvertToFloat(DType dtype, const void* src, size_t count, float* dst);
// Converts `count` float32 values to `dtype` (F32, F16 or BF16) at `dst`.
void ConvertFromFloat(DType dtype, const float* src, size_t count, void* dst);

}  // namespace arach
