// Runs a shell command for a test and keeps what it printed (stdout and stderr together) and its exit status.
#pragma once

#include <string>

namespace arach::testing {

struct CommandResult {
  int status = -1;     // the exit status; -1 when it could not start or did not exit normally
  std::string output;  // stdout and stderr, interleaved as written
};

CommandResult RunCommand(const std::string& command);

}  // namespace arach::testing
