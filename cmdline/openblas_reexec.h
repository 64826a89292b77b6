// For executables: restart the process once with OPENBLAS_CORETYPE set when OpenBLAS fell back to a
// generic kernel on a CPU with AVX2/AVX-512 (see engine/backend/cpu/openblas_setup.h). Call first in main().
#pragma once

namespace arach::cmdline {

void ReexecWithFastOpenBlasKernelIfNeeded(char** argv);

}  // namespace arach::cmdline
