// OpenBLAS picks its kernels at load time from the CPU model. CPUs newer than the library (e.g. an
// unknown Xeon model) fall back to a generic SSE3 kernel that is ~7x slower; the fix is to name the
// kernel family in OPENBLAS_CORETYPE before the library loads. These helpers tell when that is needed,
// and restart an executable with it set.
#pragma once

#include <optional>
#include <string>

namespace arach {

// The kernel family OpenBLAS is using now (e.g. "SkylakeX", "Haswell", "Prescott").
std::string OpenBlasCoreName();

// The OPENBLAS_CORETYPE this CPU should use when OpenBLAS fell back to a generic kernel that does not
// use the CPU's vector units (AVX-512 -> "SkylakeX", AVX2+FMA -> "Haswell"); nullopt when all is well
// or when OPENBLAS_CORETYPE is already set.
std::optional<std::string> RecommendedOpenBlasCoreType();

// For the executables that run the CPU backend, first thing in main(): when RecommendedOpenBlasCoreType()
// names a kernel, restarts the process (execv of /proc/self/exe with `argv`) with OPENBLAS_CORETYPE set,
// since OpenBLAS reads it only when it loads. Returns when no restart is needed (or the restart failed,
// which it reports on stderr).
void RestartWithOpenBlasCoreTypeIfNeeded(char** argv);

}  // namespace arach
