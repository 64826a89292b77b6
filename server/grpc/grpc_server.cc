#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "server/grpc/inference_service.h"
#include "server/listen_error.h"

namespace arach::server {
namespace {

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

// Insecure, TLS (cert + key) or mutual TLS (+ client CA). With TLS, gRPC's file watcher reads the files again
// every tls_reload_seconds, so a rotated certificate applies to new connections without a restart. The files
// are read once here first, so that a missing or broken one is an error at start naming it.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const GrpcOptions& options) {
  const TlsOptions& tls = options.tls;
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--tls_cert", tls.cert}, {"--tls_key", tls.key},
                                   {"--tls_client_ca", tls.client_ca}}) {
    if (path.empty()) continue;
    absl::StatusOr<std::string> text = ReadFileToString(path);
    if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat(flag, ": ", text.status().message()));
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key, tls.cert, tls.client_ca, static_cast<unsigned int>(options.tls_reload_seconds));
  grpc::experimental::TlsServerCredentialsOptions credentials(provider);
  credentials.watch_identity_key_cert_pairs();
  if (!tls.client_ca.empty()) {
    credentials.watch_root_certs();
    credentials.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    credentials.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(credentials);
}

// Takes the reflection plugin out of a builder: linking gRPC's reflection library registers it for every
// server of the process, so turning it off is a matter of removing it per server.
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) { return p->name() == "proto_server_reflection"; }),
                   plugins->end());
  }
};

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(ServiceContext& context) : service(context) {}
  InferenceService service;  // declared first: outlives the server that calls it
  std::unique_ptr<grpc::Server> server;
  std::string address;
  bool shut_down = false;
  std::thread shutdown_thread;  // runs grpc::Server::Shutdown, which returns when the calls are done
};

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcServer::~GrpcServer() { Shutdown(std::chrono::system_clock::now()); }

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const GrpcOptions& options, ServiceContext& context) {
  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, ServerCredentials(options));
  auto impl = std::make_unique<Impl>(context);
  grpc::ServerBuilder builder;
  if (!options.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  int port = 0;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(&impl->service);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  // Compressed requests are refused (UNIMPLEMENTED) before they are inflated: gRPC inflates a message whole before
  // it checks the size above, so 1.5 MB of gzip took 1.5 GB of the server's memory. Answers are not compressed.
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
  builder.SetMaxSendMessageSize(options.max_response_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, options.keepalive_min_ping_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  // gRPC binds with SO_REUSEPORT by default: a second server started on a port in use bound it too and the kernel
  // split the connections between the two. Without it the second one fails (CannotListenError).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || port == 0) return CannotListenError(options.listen);
  impl->server->GetHealthCheckService()->SetServingStatus(false);  // until the model is loaded
  impl->address = absl::StrCat(HostOf(options.listen), ":", port);
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

const std::string& GrpcServer::address() const { return impl_->address; }

void GrpcServer::SetServing(bool serving) { impl_->server->GetHealthCheckService()->SetServingStatus(serving); }

void GrpcServer::BeginShutdown(std::chrono::system_clock::time_point deadline) {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->shutdown_thread = std::thread([server = impl_->server.get(), deadline] { server->Shutdown(deadline); });
}

void GrpcServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  BeginShutdown(deadline);
  if (impl_->shutdown_thread.joinable()) impl_->shutdown_thread.join();
}

}  // namespace arach::server
