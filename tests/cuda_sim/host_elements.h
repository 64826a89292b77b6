// Element access to a DeviceMatrix held in host memory (the simulator's "device"), widened to float32 and
// rounded back to the matrix's type: what the host stand-ins for cuBLASLt and FlashInfer compute with.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/backend/device_matrix.h"
#include "engine/core/activation.h"
#include "engine/core/dtype.h"

namespace arach::testing {

inline float ElementAt(const DeviceMatrix& m, int64_t r, int64_t c) {
  float v;
  ConvertToFloat(m.dtype, static_cast<const char*>(m.data) + (r * m.stride + c) * DTypeSize(m.dtype), 1, &v);
  return v;
}

// The whole matrix widened to float32, row after row: [rows, cols] (for loops that read each element many times).
inline std::vector<float> RowsAsFloat(const DeviceMatrix& m) {
  std::vector<float> rows(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    ConvertToFloat(m.dtype, static_cast<const char*>(m.data) + r * m.stride * DTypeSize(m.dtype), static_cast<size_t>(m.cols),
                   rows.data() + r * m.cols);
  }
  return rows;
}

inline void SetElement(const DeviceMatrix& m, int64_t r, int64_t c, float v) {
  ConvertFromFloat(m.dtype, &v, 1, static_cast<char*>(m.data) + (r * m.stride + c) * DTypeSize(m.dtype));
}

// The activations in float32, by the formulas of the GPU's kernels (activation_math.cuh).
inline float FloatActivation(Activation act, float x) {
  switch (act) {
    case Activation::kGeluTanh: return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Activation::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case Activation::kSilu: return x / (1.0f + std::exp(-x));
    case Activation::kRelu: return std::fmax(x, 0.0f);
  }
  return x;
}

}  // namespace arach::testing
