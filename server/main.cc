// arach-server: serves one model over gRPC (arach.v1.Inference, grpc.health.v1.Health, reflection) with
// Prometheus metrics on a separate port. SIGTERM/SIGINT drain: health goes NOT_SERVING, new calls get
// UNAVAILABLE, calls in flight finish within --drain_grace_seconds, then the process exits 0.
// Flag names may be written with hyphens or underscores (--kv-cache-bytes or --kv_cache_bytes).
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "server/experiment.h"
#include "server/inference_service.h"
#include "server/metrics.h"
#include "server/service_context.h"
#include "tools/common/flag_names.h"
#include "tools/common/openblas_reexec.h"

ABSL_FLAG(std::string, model, "", "model folder (Hugging Face layout)");
ABSL_FLAG(std::string, adapter, "", "pre-projection + skip adapter (safetensors); enables the skip variants");
ABSL_FLAG(std::string, arach_hub_embedding, "", "ARACH hub embedding FILE.safetensors:KEY (default: derived from the embeddings)");
ABSL_FLAG(uint64_t, hub_seed, 0, "seed of the derived hub embedding");
ABSL_FLAG(double, arach_offset, -0.5, "default ARACH logit offset b");
ABSL_FLAG(std::string, default_variant, "base", "variant of requests that do not choose: base | arach | skip | arach+skip");
ABSL_FLAG(std::string, experiment, "", "A/B split of requests that choose no variant, e.g. base=50,arach=50");
ABSL_FLAG(std::string, experiment_file, "", "A/B experiment as JSON (name, arms with variant, arach_offset, weight)");
ABSL_FLAG(bool, quality_metrics, true, "compute each generated token's log-prob for arach_generated_token_logprob");
ABSL_FLAG(bool, prompt_perplexity, false, "score every Generate prompt under its variant (arach_prompt_perplexity; "
          "costs a full-vocabulary softmax per prompt token and bypasses the prefix cache)");
ABSL_FLAG(std::string, device, "cpu", "cpu | cuda");
ABSL_FLAG(int, block_size, 16, "tokens per KV-cache block");
ABSL_FLAG(int64_t, kv_cache_bytes, 0, "KV-cache pool in bytes (0: use --kv_memory_fraction)");
ABSL_FLAG(double, kv_memory_fraction, 0.1, "KV-cache pool as a fraction of the device memory free after the weights");
ABSL_FLAG(int, max_num_seqs, 64, "sequences in the running batch at most");
ABSL_FLAG(int, max_num_batched_tokens, 512, "tokens per engine step (prefill chunks + decodes)");
ABSL_FLAG(int, max_queued_requests, 1024, "requests waiting for admission at most; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(bool, prefix_caching, true, "reuse the K/V of shared prompt prefixes (per variant)");
ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC address HOST:PORT (port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9090", "Prometheus /metrics address HOST:PORT (port 0 picks one)");
ABSL_FLAG(int, drain_grace_seconds, 30, "on SIGTERM, how long calls in flight may take to finish");
ABSL_FLAG(int, max_request_bytes, 16 << 20, "largest request message accepted by gRPC");
ABSL_FLAG(int, max_prompt_bytes, 1 << 20, "largest prompt text (INVALID_ARGUMENT beyond)");
ABSL_FLAG(int, max_tokens_limit, 4096, "largest max_tokens a request may ask for");
ABSL_FLAG(int, max_prompt_tokens, 0, "largest prompt in tokens (0 = the model's context)");
ABSL_FLAG(int, max_response_bytes, 16 << 20, "largest response message");
ABSL_FLAG(int, max_concurrent_streams, 100, "concurrent calls per client connection (HTTP/2 streams)");
ABSL_FLAG(int, keepalive_time_ms, 60000, "ping an idle client connection this often to detect dead peers");
ABSL_FLAG(int, keepalive_timeout_ms, 20000, "close a connection whose ping is not answered within this time");
ABSL_FLAG(int, keepalive_min_ping_interval_ms, 10000, "clients pinging more often than this are disconnected");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain of the server: serve gRPC over TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "", "PEM CA bundle: require and verify client certificates (mutual TLS)");

namespace arach::server {
namespace {

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

absl::StatusOr<Variant> DefaultVariant() {
  auto variant = ParseVariantName(absl::GetFlag(FLAGS_default_variant));
  if (!variant.ok()) return absl::InvalidArgumentError(absl::StrCat("--default_variant: ", variant.status().message()));
  variant->arach_offset = static_cast<float>(absl::GetFlag(FLAGS_arach_offset));
  if (variant->skip && absl::GetFlag(FLAGS_adapter).empty()) {
    return absl::InvalidArgumentError("--default_variant " + variant->Name() + " needs --adapter FILE");
  }
  return variant;
}

// SIGTERM / SIGINT: main blocks them before any thread of ours or gRPC's starts (threads inherit the mask,
// and the mask survives the OpenBLAS re-exec), so they stay pending until WaitForDrainSignal takes them.
// Threads that libraries start before main may not block them; if the kernel picks one of those, the
// handler writes the signal number to a pipe that WaitForDrainSignal also watches.
int g_signal_pipe_write = -1;  // set once before the handlers are installed

sigset_t DrainSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

void OnDrainSignal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t written = ::write(g_signal_pipe_write, &byte, 1);
}

struct DrainPipe {
  int read_fd = -1;
};

absl::StatusOr<DrainPipe> InstallDrainSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("cannot create the signal pipe");
  g_signal_pipe_write = fds[1];
  struct sigaction action {};
  action.sa_handler = OnDrainSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  return DrainPipe{fds[0]};
}

int WaitForDrainSignal(const DrainPipe& pipe) {
  const sigset_t set = DrainSignals();
  while (true) {
    pollfd p{pipe.read_fd, POLLIN, 0};
    if (::poll(&p, 1, 200) == 1) {
      unsigned char byte = 0;
      if (::read(pipe.read_fd, &byte, 1) == 1) return byte;
    }
    const timespec now{0, 0};
    const int pending = ::sigtimedwait(&set, nullptr, &now);
    if (pending > 0) return pending;
  }
}

// Insecure, TLS (--tls_cert/--tls_key) or mutual TLS (+ --tls_client_ca).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key), ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (cert.empty() && key.empty()) {
    if (!ca.empty()) return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
    return grpc::InsecureServerCredentials();
  }
  if (cert.empty() || key.empty()) return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  grpc::SslServerCredentialsOptions options(ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                       : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ARACH_ASSIGN_OR_RETURN(pair.cert_chain, ReadFileToString(cert));
  ARACH_ASSIGN_OR_RETURN(pair.private_key, ReadFileToString(key));
  options.pem_key_cert_pairs.push_back(pair);
  if (!ca.empty()) {
    ARACH_ASSIGN_OR_RETURN(options.pem_root_certs, ReadFileToString(ca));
  }
  return grpc::SslServerCredentials(options);
}

int Serve() {
  if (absl::GetFlag(FLAGS_model).empty()) {
    std::fprintf(stderr, "arach-server: --model DIR is required\n");
    return 2;
  }
  auto default_variant = DefaultVariant();
  auto device = ParseDeviceKind(absl::GetFlag(FLAGS_device));
  if (!default_variant.ok() || !device.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", (default_variant.ok() ? device.status() : default_variant.status()).ToString().c_str());
    return 2;
  }
  auto drain_pipe_or = InstallDrainSignals();
  if (!drain_pipe_or.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", drain_pipe_or.status().ToString().c_str());
    return 1;
  }
  const DrainPipe drain_pipe = *drain_pipe_or;
  std::optional<Experiment> experiment;
  if (!absl::GetFlag(FLAGS_experiment).empty() && !absl::GetFlag(FLAGS_experiment_file).empty()) {
    std::fprintf(stderr, "arach-server: give --experiment or --experiment_file, not both\n");
    return 2;
  }
  if (!absl::GetFlag(FLAGS_experiment).empty() || !absl::GetFlag(FLAGS_experiment_file).empty()) {
    auto parsed = absl::GetFlag(FLAGS_experiment).empty()
                      ? LoadExperimentFile(absl::GetFlag(FLAGS_experiment_file), default_variant->arach_offset)
                      : ParseExperimentSplit(absl::GetFlag(FLAGS_experiment), default_variant->arach_offset);
    if (!parsed.ok()) {
      std::fprintf(stderr, "arach-server: %s\n", parsed.status().ToString().c_str());
      return 2;
    }
    for (const ExperimentArm& arm : parsed->arms) {
      if (arm.variant.skip && absl::GetFlag(FLAGS_adapter).empty()) {
        std::fprintf(stderr, "arach-server: experiment arm \"%s\" (%s) needs --adapter FILE\n", arm.name.c_str(),
                     arm.variant.Name().c_str());
        return 2;
      }
    }
    experiment = std::move(*parsed);
  }
  const VariantResolver variants(*default_variant, experiment);
  auto metrics = ServerMetrics::Start(absl::GetFlag(FLAGS_metrics_listen));
  if (!metrics.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", metrics.status().ToString().c_str());
    return 1;
  }
  if (experiment) {
    std::vector<std::pair<std::string, Variant>> arms;
    for (const ExperimentArm& arm : experiment->arms) arms.push_back({arm.name, arm.variant});
    (*metrics)->DeclareExperimentArms(arms);
  }
  ServiceContext context;
  context.metrics = metrics->get();
  context.variants = &variants;
  context.model_dir = absl::GetFlag(FLAGS_model);
  context.limits.max_prompt_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_prompt_bytes));
  context.limits.max_tokens = absl::GetFlag(FLAGS_max_tokens_limit);
  context.prompt_perplexity = absl::GetFlag(FLAGS_prompt_perplexity);
  context.limits.max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens);
  InferenceService service(context);

  // The server answers (health NOT_SERVING, calls UNAVAILABLE) while the model loads.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  auto credentials = ServerCredentials();
  if (!credentials.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", credentials.status().ToString().c_str());
    return 2;
  }
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), *credentials, &grpc_port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_request_bytes));
  builder.SetMaxSendMessageSize(absl::GetFlag(FLAGS_max_response_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, absl::GetFlag(FLAGS_max_concurrent_streams));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, absl::GetFlag(FLAGS_keepalive_time_ms));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, absl::GetFlag(FLAGS_keepalive_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, absl::GetFlag(FLAGS_keepalive_min_ping_interval_ms));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || grpc_port == 0) {
    std::fprintf(stderr, "arach-server: cannot listen on %s\n", absl::GetFlag(FLAGS_listen).c_str());
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus(false);
  const std::string grpc_address = absl::StrCat(HostOf(absl::GetFlag(FLAGS_listen)), ":", grpc_port);
  const std::string metrics_address = absl::StrCat(HostOf(absl::GetFlag(FLAGS_metrics_listen)), ":", (*metrics)->port());
  std::printf("arach-server loading %s; grpc=%s metrics=%s\n", context.model_dir.c_str(), grpc_address.c_str(),
              metrics_address.c_str());
  std::fflush(stdout);

  LoadModelOptions load;
  load.device = *device;
  load.block_size = absl::GetFlag(FLAGS_block_size);
  load.kv_cache_bytes = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_kv_cache_bytes)));
  load.kv_memory_fraction = absl::GetFlag(FLAGS_kv_memory_fraction);
  load.hub_embedding = absl::GetFlag(FLAGS_arach_hub_embedding);
  load.hub_seed = absl::GetFlag(FLAGS_hub_seed);
  load.adapter = absl::GetFlag(FLAGS_adapter);
  auto model = LoadModel(context.model_dir, load);
  if (!model.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", model.status().ToString().c_str());
    server->Shutdown();
    return 1;
  }
  EngineConfig config;
  config.max_num_seqs = absl::GetFlag(FLAGS_max_num_seqs);
  config.max_num_batched_tokens = absl::GetFlag(FLAGS_max_num_batched_tokens);
  config.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  config.enable_prefix_caching = absl::GetFlag(FLAGS_prefix_caching);
  config.always_compute_logprobs = absl::GetFlag(FLAGS_quality_metrics);
  ServerMetrics* metrics_ptr = metrics->get();
  config.step_observer = [metrics_ptr](const StepReport& step) { metrics_ptr->RecordStep(step); };
  auto engine = Engine::Create(std::move(*model), config);
  if (!engine.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", engine.status().ToString().c_str());
    server->Shutdown();
    return 1;
  }
  context.device = (*engine)->device();
  context.engine.store(engine->get());
  (*metrics)->AttachEngine(engine->get());
  context.state.SetPhase(Phase::kServing);
  server->GetHealthCheckService()->SetServingStatus(true);
  std::printf("arach-server ready; grpc=%s metrics=%s device=%s kv_blocks=%d default_variant=%s adapter=%s experiment=%s\n",
              grpc_address.c_str(), metrics_address.c_str(), context.device.c_str(), (*engine)->stats().kv_blocks_total,
              default_variant->Describe().c_str(), (*engine)->has_adapter() ? "yes" : "no",
              experiment ? experiment->name.c_str() : "none");
  std::fflush(stdout);

  const int signal_number = WaitForDrainSignal(drain_pipe);

  std::printf("arach-server draining (signal %d): %d calls in flight, grace %d s\n", signal_number, context.state.in_flight(),
              absl::GetFlag(FLAGS_drain_grace_seconds));
  std::fflush(stdout);
  context.state.SetPhase(Phase::kDraining);
  server->GetHealthCheckService()->SetServingStatus(false);
  const bool drained = context.state.WaitIdle(std::chrono::seconds(absl::GetFlag(FLAGS_drain_grace_seconds)));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));  // cancels what is left
  (*engine)->Shutdown();
  server.reset();
  context.engine.store(nullptr);
  (*metrics)->AttachEngine(nullptr);
  engine->reset();
  std::printf("arach-server stopped (%s)\n", drained ? "drained" : "grace period over; remaining calls cancelled");
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace arach::server

int main(int argc, char** argv) {
  const sigset_t drain_signals = arach::server::DrainSignals();
  pthread_sigmask(SIG_BLOCK, &drain_signals, nullptr);
  arach::tools::ReexecWithFastOpenBlasKernelIfNeeded(argv);
  std::vector<std::string> storage;
  std::vector<char*> args = arach::tools::NormalizeFlagNames(argc, argv, storage);
  absl::SetProgramUsageMessage("arach-server --model DIR [--adapter FILE] [--listen HOST:PORT] [--metrics_listen HOST:PORT] ...");
  absl::ParseCommandLine(argc, args.data());
  return arach::server::Serve();
}
