#include "engine/backend/cpu/openblas_setup.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace arach {

std::string OpenBlasCoreName() {
  const char* name = openblas_get_corename();
  return name == nullptr ? "" : name;
}

std::optional<std::string> RecommendedOpenBlasCoreType() {
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set != nullptr && *set != '\0') return std::nullopt;
  const std::string core = OpenBlasCoreName();
  const bool generic = core == "Prescott" || core == "Core2" || core == "Nehalem" || core == "Penryn" ||
                       core == "Dunnington" || core == "Katmai" || core == "Atom";
  if (!generic) return std::nullopt;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return std::nullopt;
}

void RestartWithOpenBlasCoreTypeIfNeeded(char** argv) {
  const auto core = RecommendedOpenBlasCoreType();
  if (!core) return;
  std::fprintf(stderr, "[arach] OpenBLAS chose the generic %s kernel on this CPU; restarting with OPENBLAS_CORETYPE=%s\n",
               OpenBlasCoreName().c_str(), core->c_str());
  ::setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
  ::execv("/proc/self/exe", argv);
  std::perror("[arach] execv failed; continuing with the runtime defaults");  // only reached on failure
}

}  // namespace arach
