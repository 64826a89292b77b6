// Activations on CPU. This file is compiled with -ffast-math so that the loops vectorise through glibc's
// libmvec (tanhf, expf, erff); the functions stay within a few ulp of the scalar ones.
#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_parallel.h"

namespace arach {
namespace {

void ApplyInPlace(Activation act, float* x, int64_t n) {
  switch (act) {
    case Activation::kGeluTanh:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      }
      return;
    case Activation::kGeluErf:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.7071067811865476f));
      return;
    case Activation::kSilu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
      return;
    case Activation::kRelu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
  }
}

// Rows of one task: fewer than 4 rows stay on the calling thread (not worth waking the others).
int64_t RowsPerChunk(int64_t rows, int threads) {
  return rows < 4 ? rows : std::max<int64_t>(1, rows / (int64_t{threads} * 4));
}

}  // namespace

void CpuBackend::ActivateImpl(Activation act, const DeviceMatrix& x) {
  team_.ForChunks(x.rows, RowsPerChunk(x.rows, threads()), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) ApplyInPlace(act, x.As<float>() + r * x.stride, x.cols);
  });
}

void CpuBackend::GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) {
  const int64_t inner = out.cols;
  team_.ForChunks(in.rows, RowsPerChunk(in.rows, threads()), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* gate = in.As<float>() + r * in.stride;
      const float* up = gate + inner;
      float* y = out.As<float>() + r * out.stride;
      for (int64_t c = 0; c < inner; ++c) y[c] = gate[c];
      ApplyInPlace(act, y, inner);
#pragma omp simd
      for (int64_t c = 0; c < inner; ++c) y[c] *= up[c];
    }
  });
}

}  // namespace arach
