#include "engine/core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace arach {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kI8: return 1;
    case DType::kF8E4M3: return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kI8: return "I8";
    case DType::kF8E4M3: return "F8_E4M3";
  }
  return "?";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  if (name == "I8") return DType::kI8;
  if (name == "F8_E4M3") return DType::kF8E4M3;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype \"", name, "\" (supported: F32, F16, BF16, I32, I64, I8, F8_E4M3)"));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or nan
    return sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs_bits < 0x38800000u) {                         // below the smallest normal half
    if (abs_bits < 0x33000000u) return sign;            // rounds to zero
    const uint32_t exponent = abs_bits >> 23;
    const uint32_t mantissa = (abs_bits & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half_mantissa = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return sign | static_cast<uint16_t>(half_mantissa);
  }
  uint32_t rounded = abs_bits + 0xfffu + ((abs_bits >> 13) & 1u);  // round to nearest even
  return sign | static_cast<uint16_t>(((rounded >> 13) - ((127 - 15) << 10)) & 0x7fffu);
}

uint16_t FloatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet nan
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float QuantizeRowInt8(const float* x, int64_t cols, int8_t* codes) {
  // max |x| over the bit patterns with the sign cleared: for floats >= 0 they order as the values do, and an inf
  // (0x7f800000) or a nan (above it) comes out largest, so one integer max finds both (and vectorises).
  uint32_t amax_bits = 0;
  for (int64_t c = 0; c < cols; ++c) {
    uint32_t bits;
    std::memcpy(&bits, x + c, sizeof(bits));
    amax_bits = std::max(amax_bits, bits & 0x7fffffffu);
  }
  if (amax_bits >= 0x7f800000u) {
    std::fill(codes, codes + cols, int8_t{0});
    return std::numeric_limits<float>::quiet_NaN();
  }
  float amax;
  std::memcpy(&amax, &amax_bits, sizeof(amax));
  const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
  const float inverse = 1.0f / scale;
  for (int64_t c = 0; c < cols; ++c) codes[c] = static_cast<int8_t>(std::clamp(std::lround(x[c] * inverse), -127L, 127L));
  return scale;
}

void QuantizeRowsInt8(const float* src, int64_t rows, int64_t cols, int8_t* codes, float* scales) {
  for (int64_t r = 0; r < rows; ++r) scales[r] = QuantizeRowInt8(src + r * cols, cols, codes + r * cols);
}

float Float8E4M3ToFloat(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  float magnitude;
  if (exponent == 0xf && mantissa == 0x7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {  // subnormal: mantissa / 8 * 2^-6
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return (bits & 0x80) != 0 ? -magnitude : magnitude;
}

void ConvertToFloat(DType dtype, const void* src, size_t count, float* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::kF16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = HalfToFloat(in[i]);
      return;
    }
    case DType::kBF16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = BFloat16ToFloat(in[i]);
      return;
    }
    case DType::kI8: {
      const auto* in = static_cast<const int8_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(in[i]);
      return;
    }
    default:
      return;  // callers check the dtype first
  }
}

void ConvertFromFloat(DType dtype, const float* src, size_t count, void* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::kF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) out[i] = FloatToHalf(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) out[i] = FloatToBFloat16(src[i]);
      return;
    }
    default:
      return;
  }
}

}  // namespace arach
