// FlashInfer's element-wise kernels for the CUDA backend (flashinfer_kernels.h): RMSNorm of rows and of each head
// (Qwen3's q/k norms), RoPE from a cos/sin table, and the gate-times-up of gated MLPs with our activation functions.
// elementwise_ops.h decides which shapes come here; the rest run on our kernels (cuda_elementwise.cu).
#include <algorithm>
#include <exception>
#include <string>
#include <type_traits>

#include "engine/backend/cuda/activation_math.cuh"
#include "engine/backend/cuda/flashinfer_error_text.cuh"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "flashinfer/activation.cuh"
#include "flashinfer/norm.cuh"
#include "flashinfer/pos_enc.cuh"

namespace arach::cuda {
namespace {

// FlashInfer reports unsupported arguments by throwing; they come back as our error messages.
template <typename Call>
std::string Guarded(const char* what, Call&& call) {
  try {
    return LaunchErrorText(call(), what);
  } catch (const std::exception& e) {
    return std::string(what) + ": " + e.what();
  }
}

// The element type of a 16-bit DType.
template <typename Body>
std::string WithElement(DType dtype, const char* what, Body&& body) {
  if (dtype == DType::kBF16) return body(nv_bfloat16{});
  if (dtype == DType::kF16) return body(half{});
  return std::string(what) + ": FlashInfer's kernels here take bf16 or f16 only";
}

template <typename E>
E* Elements(const DeviceMatrix& m) {
  return static_cast<E*>(m.data);
}

template <typename E, float (*kAct)(const float&)>
cudaError_t LaunchActAndMul(const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream) {
  // As FlashInfer's own launcher does: one block per row, one thread per 16-byte vector of the output row.
  constexpr int64_t kVector = 16 / sizeof(E);
  const int64_t d = out.cols;
  const unsigned threads = static_cast<unsigned>(std::clamp<int64_t>(d / kVector, 1, 1024));
  flashinfer::activation::act_and_mul_kernel<E, kAct>
      <<<static_cast<unsigned>(out.rows), threads, 0, stream>>>(Elements<E>(out), Elements<E>(in), static_cast<int>(d));
  return cudaGetLastError();
}

}  // namespace

std::string FlashInferRmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out,
                              cudaStream_t stream) {
  if (in.rows == 0) return {};
  return WithElement(in.dtype, "FlashInfer RMSNorm", [&](auto element) {
    using E = decltype(element);
    return Guarded("FlashInfer RMSNorm", [&] {
      return flashinfer::norm::RMSNorm<E>(Elements<E>(in), Elements<E>(weight), Elements<E>(out), static_cast<uint32_t>(in.rows),
                                          static_cast<uint32_t>(in.cols), static_cast<uint32_t>(in.stride),
                                          static_cast<uint32_t>(out.stride), eps, /*enable_pdl=*/false, stream);
    });
  });
}

std::string FlashInferRmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps,
                                   cudaStream_t stream) {
  if (x.rows == 0) return {};
  return WithElement(x.dtype, "FlashInfer head RMSNorm", [&](auto element) {
    using E = decltype(element);
    return Guarded("FlashInfer head RMSNorm", [&] {
      return flashinfer::norm::QKRMSNorm<E>(Elements<E>(x), Elements<E>(weight), Elements<E>(x), static_cast<uint32_t>(x.rows),
                                            static_cast<uint32_t>(heads), static_cast<uint32_t>(head_dim),
                                            static_cast<uint32_t>(x.stride), static_cast<uint32_t>(head_dim),
                                            static_cast<uint32_t>(x.stride), static_cast<uint32_t>(head_dim), eps,
                                            /*enable_pdl=*/false, stream);
    });
  });
}

std::string FlashInferRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                           const float* cos_sin, cudaStream_t stream) {
  if (x.rows == 0) return {};
  return WithElement(x.dtype, "FlashInfer RoPE", [&](auto element) {
    using E = decltype(element);
    return Guarded("FlashInfer RoPE", [&] {
      // The q half of FlashInfer's q/k call, in place; no k heads (the kernel's k loop runs zero times).
      E* data = Elements<E>(x);
      const size_t stride = static_cast<size_t>(x.stride), head = static_cast<size_t>(head_dim);
      return flashinfer::BatchQKApplyRotaryPosIdsCosSinCache<E, int32_t>(
          data, data, data, data, const_cast<float*>(cos_sin), const_cast<int32_t*>(positions), static_cast<uint32_t>(x.rows),
          static_cast<uint32_t>(heads), /*num_kv_heads=*/0, static_cast<uint32_t>(rotary_dim), static_cast<uint32_t>(head_dim),
          stride, head, stride, head, stride, head, stride, head, /*interleave=*/false, stream);
    });
  });
}

std::string FlashInferGatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out, cudaStream_t stream) {
  if (in.rows == 0) return {};
  return WithElement(in.dtype, "FlashInfer act-and-mul", [&](auto element) {
    using E = decltype(element);
    cudaError_t err = cudaSuccess;
    switch (act) {
      case Activation::kSilu: err = LaunchActAndMul<E, SiluOf>(in, out, stream); break;
      case Activation::kGeluTanh: err = LaunchActAndMul<E, GeluTanhOf>(in, out, stream); break;
      case Activation::kGeluErf: err = LaunchActAndMul<E, GeluErfOf>(in, out, stream); break;
      case Activation::kRelu: err = LaunchActAndMul<E, ReluOf>(in, out, stream); break;
    }
    return LaunchErrorText(err, "FlashInfer act-and-mul");
  });
}

}  // namespace arach::cuda
