#include "engine/backend/cpu/cpu_weight_dtype.h"

namespace arach {

WeightDTypePlan PlanCpuWeightDType(WeightDTypeChoice choice, bool has_f16c) {
  switch (choice) {
    case WeightDTypeChoice::kF32: return {DType::kF32, "--weight_dtype f32"};
    case WeightDTypeChoice::kF16: return {DType::kF16, "--weight_dtype f16"};
    case WeightDTypeChoice::kBF16: return {DType::kBF16, "--weight_dtype bf16"};
    case WeightDTypeChoice::kAuto: break;
  }
  return has_f16c ? WeightDTypePlan{DType::kF16, "auto: the CPU converts halves in hardware (F16C)"}
                  : WeightDTypePlan{DType::kF32, "auto: the CPU has no F16C"};
}

WeightDTypePlan ResolveCpuWeightDType(WeightDTypeChoice choice) {
  __builtin_cpu_init();
  return PlanCpuWeightDType(choice, __builtin_cpu_supports("f16c") != 0);
}

}  // namespace arach
