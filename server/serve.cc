#include "server/serve.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "server/build_info.h"
#include "server/http/http_server.h"
#include "server/inference_service.h"
#include "server/request_log.h"
#include "server/metrics.h"
#include "server/service_context.h"
#include "server/variant_resolver.h"

namespace arach::server {
namespace {

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "arach-server: %s\n", status.ToString().c_str());
  return 1;
}

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

// The started gRPC server and the address it listens on.
struct GrpcServer {
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

absl::StatusOr<GrpcServer> StartGrpcServer(const GrpcOptions& options, grpc::Service& service) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, ServerCredentials(options.tls));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.SetMaxSendMessageSize(options.max_response_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, options.keepalive_min_ping_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  GrpcServer out;
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  out.server->GetHealthCheckService()->SetServingStatus(false);  // until the model is loaded
  out.address = absl::StrCat(HostOf(options.listen), ":", port);
  return out;
}

// Loads the model and starts the engine; its steps feed `metrics`.
absl::StatusOr<std::unique_ptr<Engine>> StartEngine(const ServerConfig& config, ServerMetrics& metrics) {
  ARACH_ASSIGN_OR_RETURN(LoadedModel model, LoadModel(config.options.model_dir, config.options.load));
  EngineConfig engine_config = config.options.engine;
  engine_config.step_observer = [&metrics](const StepReport& step) { metrics.RecordStep(step); };
  return Engine::Create(std::move(model), engine_config);
}

}  // namespace

int Serve(const ServerConfig& config, const DrainPipe& drain_pipe) {
  const ServerOptions& options = config.options;
  const VariantResolver variants(config.default_variant, config.experiment);
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create(options.served_model_name);
  if (config.experiment) {
    std::vector<std::pair<std::string, Variant>> arms;
    for (const ExperimentArm& arm : config.experiment->arms) arms.push_back({arm.name, arm.variant});
    metrics->DeclareExperimentArms(arms);
  }
  RequestLog request_log;
  ServiceContext context;
  context.metrics = metrics.get();
  context.variants = &variants;
  context.served_model_name = options.served_model_name;
  context.started_unix_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch()).count();
  context.request_log = &request_log;
  context.limits = options.limits;
  RequestPolicy policy(options.prompt_perplexity, options.diagnostics_sample_rate, options.shadow_rate, std::random_device{}());
  context.policy = &policy;
  std::vector<Variant> arms;
  if (config.experiment) {
    for (const ExperimentArm& arm : config.experiment->arms) arms.push_back(arm.variant);
  }
  ShadowScorer shadow(ShadowOptions{config.shadow_variant, options.shadow_max_in_flight}, std::move(arms), *metrics);
  context.shadow = &shadow;  // outlives the engine, whose shutdown finishes the shadow sinks
  InferenceService service(context);

  // Both APIs answer (health NOT_SERVING / 503, calls UNAVAILABLE) while the model loads.
  absl::StatusOr<GrpcServer> grpc_server = StartGrpcServer(options.grpc, service);
  if (!grpc_server.ok()) return Fail(grpc_server.status());
  grpc::Server& server = *grpc_server->server;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> http_server = http::HttpServer::StartApi(options.http, context);
  if (!http_server.ok()) {
    server.Shutdown();
    return Fail(http_server.status());
  }
  std::unique_ptr<http::HttpServer> metrics_server;
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<http::HttpServer>> started = http::HttpServer::StartMetricsOnly(options.metrics_listen, *metrics);
    if (!started.ok()) {
      server.Shutdown();
      return Fail(started.status());
    }
    metrics_server = std::move(*started);
  }
  const std::string addresses = absl::StrCat("grpc=", grpc_server->address, " http=", (*http_server)->address(),
                                             " metrics=", metrics_server ? metrics_server->address() : (*http_server)->address());
  Say(absl::StrCat("arach-server ", ArachVersion(), " (", ArachGitSha(), ") loading ", options.model_dir, " as ",
                   options.served_model_name, "; ", addresses));

  absl::StatusOr<std::unique_ptr<Engine>> engine = StartEngine(config, *metrics);
  if (!engine.ok()) {
    server.Shutdown();
    return Fail(engine.status());
  }
  context.device = (*engine)->device();
  metrics->SetDevice(std::string(DeviceKindName(config.device)), context.device);
  context.engine.store(engine->get());
  metrics->AttachEngine(engine->get());
  context.state.SetPhase(Phase::kServing);
  server.GetHealthCheckService()->SetServingStatus(true);
  Say(absl::StrCat("arach-server ready; ", addresses, " device=", context.device,
                   " kv_blocks=", (*engine)->stats().kv_blocks_total, " default_variant=", config.default_variant.Describe(),
                   " adapter=", (*engine)->has_adapter() ? "yes" : "no",
                   " experiment=", config.experiment ? config.experiment->name : "none"));

  const int signal_number = WaitForDrainSignal(drain_pipe);

  Say(absl::StrCat("arach-server draining (signal ", signal_number, "): ", context.state.in_flight(), " calls in flight, grace ",
                   options.drain_grace_seconds, " s"));
  context.state.SetPhase(Phase::kDraining);  // new calls on either API: UNAVAILABLE / 503
  server.GetHealthCheckService()->SetServingStatus(false);
  const bool drained = context.state.WaitIdle(std::chrono::seconds(options.drain_grace_seconds));
  server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));  // cancels what is left
  (*engine)->Shutdown();  // finishes the HTTP calls still running (cancelled), so their threads end
  (*http_server)->Stop();
  if (metrics_server) metrics_server->Stop();
  grpc_server->server.reset();
  context.engine.store(nullptr);
  metrics->AttachEngine(nullptr);
  engine->reset();
  Say(absl::StrCat("arach-server stopped (", drained ? "drained" : "grace period over; remaining calls cancelled", ")"));
  return 0;
}

}  // namespace arach::server
