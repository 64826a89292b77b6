// The client every arach-cli command uses (--server, TLS files), and how commands report failures.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "client/arach_client.h"
#include "client/cli/options.h"

namespace arach::client {

// A client of options.server; reads the TLS files (errors name the file).
absl::StatusOr<std::unique_ptr<ArachClient>> Connect(const ConnectOptions& options);

// Prints "arach-cli COMMAND: CODE MESSAGE" to stderr for a failed call; returns the exit status (1).
int ReportRpcFailure(const char* command, const grpc::Status& status);
// Prints "arach-cli COMMAND: MESSAGE"; returns 2 for INVALID_ARGUMENT (bad options or input), else 1.
int ReportError(const char* command, const absl::Status& status);

}  // namespace arach::client
