// For executables: settings that the OpenBLAS runtime reads from the environment when it loads, before main()
// runs, so a process that needs them restarts itself once with them set. Call first in main().
//  - OPENBLAS_CORETYPE when OpenBLAS fell back to a generic kernel on a CPU with AVX2/AVX-512
//    (engine/backend/cpu/openblas_setup.h).
// (The CPU backend's own thread team needs no such setting: its threads spin briefly and then sleep by design,
// engine/backend/cpu/cpu_parallel.h.)
#pragma once

namespace arach::cmdline {

void ReexecWithRuntimeSettingsIfNeeded(char** argv);

}  // namespace arach::cmdline
