#include "cmdline/runtime_reexec.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "engine/backend/cpu/openblas_setup.h"

namespace arach::cmdline {
namespace {

bool IsSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

void ReexecWithRuntimeSettingsIfNeeded(char** argv) {
  bool restart = false;
  if (const auto core = RecommendedOpenBlasCoreType(); core) {
    std::fprintf(stderr, "[arach] OpenBLAS chose the generic %s kernel on this CPU; restarting with OPENBLAS_CORETYPE=%s\n",
                 OpenBlasCoreName().c_str(), core->c_str());
    ::setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
    restart = true;
  }
  if (!IsSet("OMP_WAIT_POLICY") && !IsSet("GOMP_SPINCOUNT")) {
    ::setenv("GOMP_SPINCOUNT", "1000", 1);  // short spins: see the header
    restart = true;
  }
  if (!restart) return;
  ::execv("/proc/self/exe", argv);
  std::perror("[arach] execv failed; continuing with the runtime defaults");  // only reached on failure
}

}  // namespace arach::cmdline
