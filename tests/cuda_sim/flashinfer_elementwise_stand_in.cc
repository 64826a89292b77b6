// What FlashInfer's element-wise kernels compute (engine/backend/cuda/flashinfer_kernels.h), written on the host for
// the SIMT simulator, which cannot run FlashInfer's inline PTX: float32 arithmetic on the widened inputs, each output
// rounded once to the matrix's type, as norm.cuh, pos_enc.cuh and activation.cuh do. The cuda-sim op suites reach them
// through elementwise_ops.h's choices, so those choices and everything around them run in CI.
#include <cmath>
#include <string>

#include "engine/backend/cuda/flashinfer_kernels.h"
#include "tests/cuda_sim/host_elements.h"

namespace arach::cuda {
namespace {

using testing::ElementAt;
using testing::FloatActivation;
using testing::SetElement;

// In place or not: out[r, first + c] = x[r, first + c] / rms * weight[c] over `width` columns from `first`.
void RmsNormColumns(const DeviceMatrix& in, int64_t first, int64_t width, const DeviceMatrix& weight, float eps,
                    const DeviceMatrix& out) {
  for (int64_t r = 0; r < in.rows; ++r) {
    float square = 0.0f;
    for (int64_t c = 0; c < width; ++c) square += ElementAt(in, r, first + c) * ElementAt(in, r, first + c);
    const float inverse = 1.0f / std::sqrt(square / static_cast<float>(width) + eps);
    for (int64_t c = 0; c < width; ++c) SetElement(out, r, first + c, ElementAt(in, r, first + c) * inverse * ElementAt(weight, 0, c));
  }
}

}  // namespace

std::string FlashInferRmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out,
                              cudaStream_t /*stream*/) {
  RmsNormColumns(in, 0, in.cols, weight, eps, out);
  return "";
}

std::string FlashInferRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps,
                                   cudaStream_t /*stream*/) {
  for (int h = 0; h < heads; ++h) RmsNormColumns(x, static_cast<int64_t>(h) * head_dim, head_dim, weight, eps, x);
  return "";
}

std::string FlashInferRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                           const float* cos_sin, cudaStream_t /*stream*/) {
  const int half = rotary_dim / 2;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* cos_row = cos_sin + static_cast<int64_t>(positions[r]) * rotary_dim;
    for (int h = 0; h < heads; ++h) {
      const int64_t at = static_cast<int64_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float a = ElementAt(x, r, at + i), b = ElementAt(x, r, at + half + i);
        const float c = cos_row[i], s = cos_row[half + i];
        SetElement(x, r, at + i, a * c - b * s);
        SetElement(x, r, at + half + i, b * c + a * s);
      }
    }
  }
  return "";
}

std::string FlashInferGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t /*stream*/) {
  for (int64_t r = 0; r < out.rows; ++r) {
    for (int64_t c = 0; c < out.cols; ++c) SetElement(out, r, c, FloatActivation(act, ElementAt(in, r, c)) * ElementAt(in, r, out.cols + c));
  }
  return "";
}

}  // namespace arach::cuda
