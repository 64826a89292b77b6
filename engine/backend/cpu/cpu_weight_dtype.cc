#include "engine/backend/cpu/cpu_weight_dtype.h"

#include <cpuid.h>

#include "engine/backend/cpu/half_elements.h"

namespace arach {

WeightDTypePlan PlanCpuWeightDType(WeightDTypeChoice choice, bool cpu_has_f16c, bool kernels_use_f16c) {
  switch (choice) {
    case WeightDTypeChoice::kF32: return {DType::kF32, "--weight_dtype f32"};
    case WeightDTypeChoice::kF16: return {DType::kF16, "--weight_dtype f16"};
    case WeightDTypeChoice::kBF16: return {DType::kBF16, "--weight_dtype bf16"};
    case WeightDTypeChoice::kInt8: return {DType::kI8, "--weight_dtype int8 (one scale per output row)"};
    case WeightDTypeChoice::kAuto: break;
  }
  if (!cpu_has_f16c) return {DType::kF32, "auto: the CPU has no F16C"};
  if (!kernels_use_f16c) {
    // Halves widened one at a time in software stream half the bytes but run several times slower than float32.
    return {DType::kF32, "auto: this build's kernels widen halves in software (compiled without F16C: ARACH_CPU_NATIVE=OFF)"};
  }
  return {DType::kF16, "auto: the CPU converts halves in hardware (F16C)"};
}

KvDTypePlan PlanCpuKvDType(KvDTypeChoice choice, DType weight_dtype) {
  switch (choice) {
    case KvDTypeChoice::kF32: return {DType::kF32, "--kv_cache_dtype f32"};
    case KvDTypeChoice::kF16: return {DType::kF16, "--kv_cache_dtype f16"};
    case KvDTypeChoice::kBF16: return {DType::kBF16, "--kv_cache_dtype bf16"};
    case KvDTypeChoice::kAuto: break;
  }
  return weight_dtype == DType::kF32 ? KvDTypePlan{DType::kF32, "auto: float32 weights"}
                                     : KvDTypePlan{DType::kF16, "auto: weights narrower than float32"};
}

WeightDTypePlan ResolveCpuWeightDType(WeightDTypeChoice choice) {
  // CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports knows no "f16c").
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool has_f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  return PlanCpuWeightDType(choice, has_f16c, cpu::kHardwareHalfWidening);
}

}  // namespace arach
