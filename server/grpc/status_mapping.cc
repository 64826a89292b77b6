#include "server/grpc/status_mapping.h"

#include <string>

namespace arach::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering (both follow google.rpc.Code).
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())), std::string(status.message()));
}

}  // namespace arach::server
