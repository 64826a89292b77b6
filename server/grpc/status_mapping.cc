#include "server/grpc/status_mapping.h"

#include <string>

#include "engine/core/field_error.h"

namespace arach::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering (both follow google.rpc.Code).
  // The message rides in a trailer (percent-encoded: up to 3 bytes a byte) and gRPC refuses a large one, so that
  // the client saw RESOURCE_EXHAUSTED "received initial metadata size exceeds limit" instead of an error that
  // quotes a long value it sent (a 20 kB role): clipped to kMaxMessageBytes.
  constexpr size_t kMaxMessageBytes = 1024;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())), ClipForError(status.message(), kMaxMessageBytes));
}

}  // namespace arach::server
