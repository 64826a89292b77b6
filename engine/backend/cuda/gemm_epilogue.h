// The activations the GPU's GEMMs apply in their epilogue (cublaslt_gemm.h), plain C++ so that the SIMT simulator's
// backend (tests/cuda_sim) fuses the same ones.
#pragma once

#include <optional>

#include "engine/core/activation.h"

namespace arach::cuda {

// A point-wise function cuBLASLt applies to each result, after the bias, before rounding it to the output type.
enum class GemmEpilogue {
  kNone,
  kGeluTanh,  // cuBLASLt's GELU: the tanh approximation, GPT-2's gelu_new (Activation::kGeluTanh)
  kRelu,
};

// The epilogue that applies `act`, where cuBLASLt has one (not exact GELU nor SiLU).
inline std::optional<GemmEpilogue> GemmEpilogueFor(Activation act) {
  if (act == Activation::kGeluTanh) return GemmEpilogue::kGeluTanh;
  if (act == Activation::kRelu) return GemmEpilogue::kRelu;
  return std::nullopt;
}

}  // namespace arach::cuda
