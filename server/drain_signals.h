// SIGTERM / SIGINT start the drain. main blocks them before any thread of ours or gRPC's starts (threads
// inherit the mask, and it survives the OpenBLAS re-exec), so they stay pending until WaitForDrainSignal
// takes them with sigtimedwait. Threads that libraries start before main may not block them; if the kernel
// delivers one there, a handler writes the signal number to a pipe that WaitForDrainSignal also watches.
#pragma once

#include <csignal>

#include "absl/status/statusor.h"

namespace arach::server {

// The set {SIGTERM, SIGINT}.
sigset_t DrainSignals();

// The read end of the handler's pipe (the handler writes the signal number).
struct DrainPipe {
  int read_fd = -1;
};
// Installs the handlers. Once per process: the handler's pipe is the one process-wide state a signal
// handler can reach.
absl::StatusOr<DrainPipe> InstallDrainSignalHandlers();

// Blocks until SIGTERM or SIGINT arrives; returns its number.
int WaitForDrainSignal(const DrainPipe& pipe);

}  // namespace arach::server
