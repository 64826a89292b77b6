// Linear layers on CPU: one OpenBLAS call per projection (sgemv for a single row).
#include <cblas.h>

#include <cstring>

#include "engine/backend/cpu/cpu_backend.h"

namespace arach {

void CpuBackend::Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                        const DeviceMatrix& out, bool accumulate) {
  const int64_t m = in.rows, n = weight.rows, k = weight.cols;
  if (m == 0) return;
  float beta = accumulate ? 1.0f : 0.0f;
  if (bias.data != nullptr) {
    const float* b = bias.As<float>();
    for (int64_t r = 0; r < m; ++r) {
      float* y = out.As<float>() + r * out.stride;
      if (accumulate) {
        for (int64_t c = 0; c < n; ++c) y[c] += b[c];
      } else {
        std::memcpy(y, b, n * sizeof(float));
      }
    }
    beta = 1.0f;
  }
  if (m == 1) {
    // y (n) = W (n x k) x (k)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(n), static_cast<blasint>(k), 1.0f,
                weight.As<float>(), static_cast<blasint>(weight.stride), in.As<float>(), 1, beta,
                out.As<float>(), 1);
    return;
  }
  // out (m x n) = in (m x k) . W^T (k x n)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, in.As<float>(), static_cast<blasint>(in.stride), weight.As<float>(),
              static_cast<blasint>(weight.stride), beta, out.As<float>(), static_cast<blasint>(out.stride));
}

}  // namespace arach
