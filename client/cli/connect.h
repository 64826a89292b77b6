// The client every arach-cli command uses: --server, and TLS from --tls_ca / --tls_cert / --tls_key /
// --tls_server_name (file paths). Exits the process with a message when a TLS file cannot be read.
#pragma once

#include <memory>

#include "client/arach_client.h"

namespace arach::client {

std::unique_ptr<ArachClient> ConnectFromFlags();

// Prints "arach-cli COMMAND: CODE MESSAGE" to stderr for a failed call; returns the exit status (1).
int ReportRpcFailure(const char* command, const grpc::Status& status);

}  // namespace arach::client
