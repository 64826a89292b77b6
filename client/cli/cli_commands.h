// Subcommands of arach-cli. Each reads its flags (cli_flags.h) and returns a process exit code.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"

namespace arach::client {

int RunGenerate();
int RunScore();
int RunInfo();
int RunHealth();
int RunBench();
int RunEval();
int RunAb();

// The VariantSpec given by --variant (empty = server's choice) and --arach_offset (NaN = unset).
absl::StatusOr<arach::v1::VariantSpec> VariantFromFlags(const std::string& variant, double offset);

// Sets `request`'s variant and experiment key from --variant, --arach_offset and --experiment_key
// (GenerateRequest and ScoreRequest); false after printing the error.
template <typename Request>
bool ApplyVariantFlags(Request* request);

}  // namespace arach::client
