// For executables: settings that the OpenBLAS and OpenMP runtimes read from the environment when they load,
// before main() runs, so a process that needs them restarts itself once with them set. Call first in main().
//  - OPENBLAS_CORETYPE when OpenBLAS fell back to a generic kernel on a CPU with AVX2/AVX-512
//    (engine/backend/cpu/openblas_setup.h).
//  - GOMP_SPINCOUNT=1000 unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set: an idle OpenMP thread spins about a
//    microsecond before it sleeps instead of libgomp's default of about a millisecond. Spinning that long steals the
//    CPU from the very thread a barrier waits for when the process does not have its cores to itself (a busy
//    neighbour, a second replica, a CPU-limited pod): decode slowed 3.4x beside one busy thread and 6.8x beside a
//    second replica with the default, 1.9x and 1.8x with 1000, with idle speed unchanged (docs/ARCHITECTURE.md,
//    Threads).
#pragma once

namespace arach::cmdline {

void ReexecWithRuntimeSettingsIfNeeded(char** argv);

}  // namespace arach::cmdline
