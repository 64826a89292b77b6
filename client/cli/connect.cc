#include "client/cli/connect.h"

#include <cstdio>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "client/cli/cli_flags.h"
#include "engine/core/mapped_file.h"

namespace arach::client {
namespace {

std::string ReadPem(const std::string& path) {
  if (path.empty()) return "";
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    std::fprintf(stderr, "arach-cli: %s\n", text.status().ToString().c_str());
    std::exit(2);  // a command-line tool: a missing certificate ends it
  }
  return *text;
}

}  // namespace

std::unique_ptr<ArachClient> ConnectFromFlags() {
  ClientTls tls;
  tls.root_certs = ReadPem(absl::GetFlag(FLAGS_tls_ca));
  tls.cert_chain = ReadPem(absl::GetFlag(FLAGS_tls_cert));
  tls.private_key = ReadPem(absl::GetFlag(FLAGS_tls_key));
  tls.server_name = absl::GetFlag(FLAGS_tls_server_name);
  return ArachClient::Connect(absl::GetFlag(FLAGS_server), tls);
}

int ReportRpcFailure(const char* command, const grpc::Status& status) {
  std::fprintf(stderr, "arach-cli %s: %d %s\n", command, static_cast<int>(status.error_code()), status.error_message().c_str());
  return 1;
}

}  // namespace arach::client
