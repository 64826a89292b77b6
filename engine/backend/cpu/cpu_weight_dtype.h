// Which dtypes the CPU backend keeps weight matrices and the KV cache in (projections, embeddings, LM head), and why. f16 and bf16
// halve the bytes a decode step streams, which is what bounds it: the kernels widen them to float32 in registers
// and compute in float32, so the only change to the math is the weights' rounding at load.
#pragma once

#include <string>

#include "engine/backend/backend.h"
#include "engine/core/dtype.h"

namespace arach {

struct WeightDTypePlan {
  DType dtype = DType::kF32;
  std::string reason;  // e.g. "auto: the CPU converts halves in hardware (F16C)"
};

// kAuto: f16 when the CPU has F16C and the kernels were compiled to use it (`kernels_use_f16c`: a portable
// build, ARACH_CPU_NATIVE=OFF, widens halves in software), else float32; an explicit choice wins.
WeightDTypePlan PlanCpuWeightDType(WeightDTypeChoice choice, bool cpu_has_f16c, bool kernels_use_f16c);
// The plan on this CPU for this build.
WeightDTypePlan ResolveCpuWeightDType(WeightDTypeChoice choice);

// Which dtype the CPU backend keeps the KV cache in, and why.
struct KvDTypePlan {
  DType dtype = DType::kF32;
  std::string reason;  // e.g. "auto: weights narrower than float32"
};
// kAuto: f16 when the weight matrices are narrower than float32 (`weight_dtype` f16, bf16 or int8), else float32.
KvDTypePlan PlanCpuKvDType(KvDTypeChoice choice, DType weight_dtype);

}  // namespace arach
