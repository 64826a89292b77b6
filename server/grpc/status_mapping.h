// The one place where engine errors (absl::Status) become gRPC statuses.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace arach::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace arach::server
