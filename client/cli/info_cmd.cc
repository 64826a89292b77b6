// arach-cli info / health.
#include <cstdio>

#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/print_json.h"

namespace arach::client {

int RunInfo(const ConnectOptions& o) {
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o);
  if (!client.ok()) return ReportError("info", client.status());
  arach::v1::ModelInfo info;
  const grpc::Status status = (*client)->GetModelInfo(&info);
  if (!status.ok()) return ReportRpcFailure("info", status);
  PrintJson(info);
  return 0;
}

int RunHealth(const ConnectOptions& o) {
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o);
  if (!client.ok()) return ReportError("health", client.status());
  grpc::health::v1::HealthCheckResponse::ServingStatus serving;
  const grpc::Status status = (*client)->Health("", &serving);
  if (!status.ok()) return ReportRpcFailure("health", status);
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(serving).c_str());
  return serving == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace arach::client
