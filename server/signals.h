// The signals arach-server acts on: SIGTERM / SIGINT start the drain, SIGHUP reloads the API keys and the HTTPS
// certificate. main blocks them before any thread of ours or gRPC's starts (threads inherit the mask, and it
// survives the OpenBLAS re-exec), so they stay pending until WaitForSignal takes them with sigtimedwait.
// Threads that libraries start before main may not block them; if the kernel delivers one there, a handler
// writes the signal number to a pipe that WaitForSignal also watches.
#pragma once

#include <csignal>

#include "absl/status/statusor.h"

namespace arach::server {

// The set {SIGTERM, SIGINT, SIGHUP}.
sigset_t ServerSignals();

// The read end of the handler's pipe (the handler writes the signal number).
struct SignalPipe {
  int read_fd = -1;
};
// Installs the handlers. Once per process: the handler's pipe is the one process-wide state a signal
// handler can reach.
absl::StatusOr<SignalPipe> InstallSignalHandlers();

// Blocks until one of ServerSignals() arrives; returns its number.
int WaitForSignal(const SignalPipe& pipe);

}  // namespace arach::server
