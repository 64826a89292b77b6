// The activations' formulas on the device, in one place: our element-wise kernels (cuda_elementwise.cu, also compiled
// for the SIMT simulator) and FlashInfer's act-and-mul kernel (flashinfer_elementwise.cu, which takes them as
// `float (*)(const float&)`) use the same ones.
#pragma once

#include <cuda_runtime.h>

#include "engine/core/activation.h"

namespace arach::cuda {

__device__ __forceinline__ float SiluOf(const float& x) { return x / (1.0f + __expf(-x)); }
__device__ __forceinline__ float GeluTanhOf(const float& x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float GeluErfOf(const float& x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
__device__ __forceinline__ float ReluOf(const float& x) { return fmaxf(x, 0.0f); }

__device__ __forceinline__ float Act(Activation act, float x) {
  switch (act) {
    case Activation::kGeluTanh: return GeluTanhOf(x);
    case Activation::kGeluErf: return GeluErfOf(x);
    case Activation::kSilu: return SiluOf(x);
    case Activation::kRelu: return ReluOf(x);
  }
  return x;
}

}  // namespace arach::cuda
