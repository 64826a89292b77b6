#include "client/cli/connect.h"

#include <cstdio>

#include "absl/status/status.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"

namespace arach::client {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path) {
  if (path.empty()) return std::string();
  return ReadFileToString(path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArachClient>> Connect(const ConnectOptions& options) {
  ClientTls tls;
  ARACH_ASSIGN_OR_RETURN(tls.root_certs, ReadPem(options.tls_ca));
  ARACH_ASSIGN_OR_RETURN(tls.cert_chain, ReadPem(options.tls_cert));
  ARACH_ASSIGN_OR_RETURN(tls.private_key, ReadPem(options.tls_key));
  tls.server_name = options.tls_server_name;
  return ArachClient::Connect(options.server, tls, options.api_key);
}

int ReportRpcFailure(const char* command, const grpc::Status& status) {
  // gRPC's status codes are absl's, number for number.
  const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  std::fprintf(stderr, "arach-cli %s: %s: %s\n", command, code.c_str(), status.error_message().c_str());
  return 1;
}

int ReportError(const char* command, const absl::Status& status) {
  std::fprintf(stderr, "arach-cli %s: %s\n", command, std::string(status.message()).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace arach::client
