#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "server/grpc/inference_service.h"

namespace arach::server {
namespace {

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

// Insecure, TLS (cert + key) or mutual TLS (+ client CA).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsOptions& tls) {
  if (tls.cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(tls.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                                  : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ARACH_ASSIGN_OR_RETURN(pair.cert_chain, ReadFileToString(tls.cert));
  ARACH_ASSIGN_OR_RETURN(pair.private_key, ReadFileToString(tls.key));
  options.pem_key_cert_pairs.push_back(pair);
  if (!tls.client_ca.empty()) {
    ARACH_ASSIGN_OR_RETURN(options.pem_root_certs, ReadFileToString(tls.client_ca));
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(ServiceContext& context) : service(context) {}
  InferenceService service;  // declared first: outlives the server that calls it
  std::unique_ptr<grpc::Server> server;
  std::string address;
  bool shut_down = false;
};

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcServer::~GrpcServer() { Shutdown(std::chrono::system_clock::now()); }

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const GrpcOptions& options, ServiceContext& context) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, ServerCredentials(options.tls));
  auto impl = std::make_unique<Impl>(context);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(&impl->service);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.SetMaxSendMessageSize(options.max_response_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, options.keepalive_min_ping_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  impl->server->GetHealthCheckService()->SetServingStatus(false);  // until the model is loaded
  impl->address = absl::StrCat(HostOf(options.listen), ":", port);
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

const std::string& GrpcServer::address() const { return impl_->address; }

void GrpcServer::SetServing(bool serving) { impl_->server->GetHealthCheckService()->SetServingStatus(serving); }

void GrpcServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->server->Shutdown(deadline);
}

}  // namespace arach::server
