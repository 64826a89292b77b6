#include "server/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace arach::server {
namespace {

// Written once by InstallDrainSignalHandlers, read by the handler (async-signal-safe: a plain int).
int g_signal_pipe_write = -1;

void OnServerSignal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t written = ::write(g_signal_pipe_write, &byte, 1);
}

}  // namespace

sigset_t ServerSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

absl::StatusOr<SignalPipe> InstallSignalHandlers() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("cannot create the signal pipe");
  g_signal_pipe_write = fds[1];
  struct sigaction action {};
  action.sa_handler = OnServerSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGHUP, &action, nullptr);
  return SignalPipe{fds[0]};
}

int WaitForSignal(const SignalPipe& pipe) {
  const sigset_t set = ServerSignals();
  while (true) {
    pollfd p{pipe.read_fd, POLLIN, 0};
    if (::poll(&p, 1, 200) == 1) {
      unsigned char byte = 0;
      if (::read(pipe.read_fd, &byte, 1) == 1) return byte;
    }
    const timespec now{0, 0};
    const int pending = ::sigtimedwait(&set, nullptr, &now);
    if (pending > 0) return pending;
  }
}

}  // namespace arach::server
