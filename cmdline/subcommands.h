// Programs with subcommands (arach-cli, arach-run). Each command declares the flags it reads, so that
//   PROGRAM --help            lists the commands,
//   PROGRAM COMMAND --help    lists that command's flags with their defaults and help,
// and a flag given to a command that does not read it is an error naming both (instead of being ignored).
// Call these with argv after NormalizeFlagNames and before absl::ParseCommandLine.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach::cmdline {

struct Subcommand {
  std::string name;                // e.g. "generate"
  std::string summary;             // one line
  std::vector<std::string> flags;  // the Abseil flag names it reads (underscores)
};

// What the arguments ask for.
struct Invocation {
  const Subcommand* command = nullptr;  // null when no command is named
  bool help = false;                    // --help, -h, --helpfull or --helpshort
};

// The command (the first argument that is neither a flag nor a flag's value) and whether help was asked.
// An unknown command name is INVALID_ARGUMENT listing the known ones.
absl::StatusOr<Invocation> ReadInvocation(const std::vector<Subcommand>& commands, int argc, char** argv);

// "usage: PROGRAM COMMAND [flags]" and one line per command.
std::string ProgramHelp(absl::string_view program, const std::vector<Subcommand>& commands);
// The command's summary and each of its flags with its default and help text.
std::string CommandHelp(absl::string_view program, const Subcommand& command);

// INVALID_ARGUMENT naming the first flag in argv that `command` does not read.
absl::Status CheckFlagsBelong(absl::string_view program, const Subcommand& command, int argc, char** argv);

// The start of a subcommand program, all of the above in order: prints the help asked for (exit 0), or a
// usage error (unknown command, no command, a flag of another command: exit 2); else parses the flags
// (absl::ParseCommandLine) and returns the command to run.
struct SubcommandStart {
  const Subcommand* command = nullptr;  // null: end the process with exit_status
  int exit_status = 0;
};
SubcommandStart StartSubcommand(absl::string_view program, const std::vector<Subcommand>& commands, int argc, char** argv);

// The same for a program that is one command (the benchmarks): --help prints its flags (exit 0), a flag it
// does not read is a usage error (exit 2); else the flags are parsed and `command` is returned.
SubcommandStart StartSingleCommand(const Subcommand& command, int argc, char** argv);

}  // namespace arach::cmdline
