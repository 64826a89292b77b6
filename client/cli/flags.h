// arach-cli's flags (defined in flags.cc, the only file that reads them), the options each command is
// built from, and the command table behind `arach-cli --help` and `arach-cli COMMAND --help`.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/options.h"
#include "cmdline/subcommands.h"

namespace arach::client {

// Every command with the flags it reads.
const std::vector<cmdline::Subcommand>& CliCommands();

absl::StatusOr<GenerateOptions> GenerateOptionsFromFlags();  // --ids must be integers
ScoreOptions ScoreOptionsFromFlags();
EmbedOptions EmbedOptionsFromFlags();
DiagnosticsOptions DiagnosticsOptionsFromFlags();
ConnectOptions ConnectOptionsFromFlags();
LoraAdminOptions LoraAdminOptionsFromFlags();
BenchOptions BenchOptionsFromFlags();
EvalOptions EvalOptionsFromFlags();
AbOptions AbOptionsFromFlags();
absl::StatusOr<BatchOptions> BatchOptionsFromFlags();  // --input given; --concurrency, --max_attempts in range

}  // namespace arach::client
