#include "cmdline/runtime_reexec.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "engine/backend/cpu/openblas_setup.h"

namespace arach::cmdline {

void ReexecWithRuntimeSettingsIfNeeded(char** argv) {
  const auto core = RecommendedOpenBlasCoreType();
  if (!core) return;
  std::fprintf(stderr, "[arach] OpenBLAS chose the generic %s kernel on this CPU; restarting with OPENBLAS_CORETYPE=%s\n",
               OpenBlasCoreName().c_str(), core->c_str());
  ::setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
  ::execv("/proc/self/exe", argv);
  std::perror("[arach] execv failed; continuing with the runtime defaults");  // only reached on failure
}

}  // namespace arach::cmdline
