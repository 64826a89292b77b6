// Activations on CPU. This file is compiled with -ffast-math so that the loops vectorise through glibc's
// libmvec (tanhf, expf, erff); the functions stay within a few ulp of the scalar ones.
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

}  // namespace

void CpuBackend::ActivateImpl(Activation act, const DeviceMatrix& x) {
  cpu::ParallelRanges(x.rows, x.rows >= 4 ? threads() : 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) ApplyInPlace(act, x.As<float>() + r * x.stride, x.cols);
  });
}

void CpuBackend::GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) {
  const int64_t inner = out.cols;
  cpu::ParallelRanges(in.rows, in.rows >= 4 ? threads() : 1, [&](int64_t first, int64_t last) {
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
