#include "server/serve.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/core/status.h"
#include "server/build_info.h"
#include "server/engine_health_watch.h"
#include "server/grpc/grpc_server.h"
#include "server/http/http_server.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/service_context.h"
#include "server/variant_resolver.h"

namespace arach::server {
namespace {

// How often the gRPC health service catches up with the engine's health.
constexpr std::chrono::milliseconds kEngineHealthPeriod{500};

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "arach-server: %s\n", status.ToString().c_str());
  return 1;
}

// Loads the model and starts the engine; its steps feed `metrics`.
absl::StatusOr<std::unique_ptr<Engine>> StartEngine(const ServerConfig& config, ServerMetrics& metrics) {
  ARACH_ASSIGN_OR_RETURN(ModelBundle model, LoadModelBundle(config.options.model_dir, config.options.load));
  EngineConfig engine_config = config.options.engine;
  engine_config.step_observer = [&metrics](const StepReport& step) { metrics.RecordStep(step); };
  return Engine::Create(std::move(model), engine_config);
}

}  // namespace

int Serve(const ServerConfig& config, const SignalPipe& signal_pipe) {
  const ServerOptions& options = config.options;
  const VariantResolver variants(config.default_variant, config.experiment);
  absl::StatusOr<std::unique_ptr<ApiKeys>> keys = ApiKeys::Load(options.api_key_file, options.api_key);
  if (!keys.ok()) return Fail(keys.status());
  RateLimiter rate_limiter;
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create(options.served_model_name);
  metrics->DeclareKeys((*keys)->open() ? std::vector<std::string>{kOpenCallerName} : (*keys)->names());
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
  context.keys = keys->get();
  context.rate_limiter = &rate_limiter;
  context.metrics_need_key = options.metrics_auth;
  context.prefix_cache_per_key = options.prefix_cache_per_key;
  context.replica_name = options.replica_name;
  context.exclude_tools_when_tool_choice_none = options.exclude_tools_when_tool_choice_none;
  context.trust_request_chat_template = options.trust_request_chat_template;
  context.allow_runtime_lora_updating = options.allow_runtime_lora_updating;
  std::optional<ResponseStore> responses;
  if (options.responses_store_bytes > 0) {
    responses.emplace(static_cast<size_t>(options.responses_store_bytes), context.metrics);
    context.responses = &*responses;
  }
  RequestPolicy policy(options.prompt_perplexity, options.diagnostics_sample_rate, options.shadow_rate, std::random_device{}());
  context.policy = &policy;
  std::vector<Variant> arms;
  if (config.experiment) {
    for (const ExperimentArm& arm : config.experiment->arms) arms.push_back(arm.variant);
  }
  ShadowScorer shadow(ShadowOptions{config.shadow_variant, options.shadow_max_in_flight}, std::move(arms), *metrics);
  context.shadow = &shadow;  // outlives the engine, whose shutdown finishes the shadow sinks

  // Both APIs answer (health NOT_SERVING / 503, calls UNAVAILABLE) while the model loads.
  absl::StatusOr<std::unique_ptr<GrpcServer>> grpc_server = GrpcServer::Start(options.grpc, context);
  if (!grpc_server.ok()) return Fail(grpc_server.status());
  GrpcServer& server = **grpc_server;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> http_server = http::HttpServer::StartApi(options.http, context);
  if (!http_server.ok()) return Fail(http_server.status());
  std::unique_ptr<http::HttpServer> metrics_server;
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<http::HttpServer>> started = http::HttpServer::StartProbesAndMetrics(options.metrics_listen, context);
    if (!started.ok()) return Fail(started.status());
    metrics_server = std::move(*started);
  }
  const std::string addresses = absl::StrCat("grpc=", server.address(), " http=", (*http_server)->address(),
                                             " metrics=", metrics_server ? metrics_server->address() : (*http_server)->address());
  Say(absl::StrCat("arach-server ", ArachVersion(), " (", ArachGitSha(), ") loading ", options.model_dir, " as ",
                   options.served_model_name, "; ", addresses));
  Say((*keys)->open() ? "arach-server is OPEN: no API key is configured (--api_key_file, --api_key), so anyone who reaches "
                        "its ports may call it with every scope"
                      : absl::StrCat("arach-server requires an API key: ", (*keys)->size(), " configured",
                                     options.metrics_auth ? " (also for /metrics)" : " (/metrics stays open)"));

  absl::StatusOr<std::unique_ptr<Engine>> engine = StartEngine(config, *metrics);
  if (!engine.ok()) return Fail(engine.status());
  const ChatTemplate* chat_template = (*engine)->chat_template();
  absl::StatusOr<ChatOutputFormat> chat_output = ResolveChatOutputFormat(
      chat_template != nullptr ? chat_template->SourceFor(/*with_tools=*/true) : "", options.tool_call_parser, options.reasoning_parser);
  if (!chat_output.ok()) return Fail(chat_output.status());
  context.chat_output = *chat_output;
  context.device = (*engine)->device();
  metrics->SetDevice(std::string(DeviceKindName(config.device)), context.device);
  context.engine.store(engine->get());
  metrics->AttachEngine(engine->get());
  context.state.SetPhase(Phase::kServing);
  server.SetServing(true);
  const WeightQuantization& quantization = (*engine)->model_config().quantization;
  Say(absl::StrCat("arach-server ready; ", addresses, " device=", context.device,
                   quantization.quantized() ? absl::StrCat(" checkpoint=", quantization.Describe(), " dequantized at load") : "",
                   " max_model_len=", (*engine)->model_config().max_positions, " kv_blocks=", (*engine)->stats().kv_blocks_total, " (", (*engine)->kv_memory_note(), ")",
                   " default_variant=", config.default_variant.Describe(),
                   " adapter=", (*engine)->has_adapter() ? "yes" : "no",
                   (*engine)->lora_names().empty() ? "" : absl::StrCat(" lora_adapters=", absl::StrJoin((*engine)->lora_names(), ",")),
                   " embedding_pooling=", PoolingModeName((*engine)->embedding_config().pooling),
                   " embedding_max_tokens=", (*engine)->max_embedding_tokens(), (*engine)->embedding_config().lowercase ? " embedding_lowercase=yes" : "",
                   (*engine)->embedding_config().default_prompt.empty() ? "" : " embedding_default_prompt=yes",
                   " tool_calls=", context.chat_output.ToolsName(),
                   context.chat_output.reasoning ? absl::StrCat(" reasoning=", context.chat_output.ReasoningName()) : "", " structured_output=",
                   StructuredOutputAvailable() ? "yes" : "no",
                   " experiment=", config.experiment ? config.experiment->name : "none"));

  // The gRPC health service follows the engine's health while serving (HTTP's probes ask it themselves).
  auto health_watch = std::make_unique<EngineHealthWatch>(**engine, kEngineHealthPeriod, [&](const absl::Status& health) {
    if (context.state.phase() == Phase::kServing) server.SetServing(health.ok());
    Say(health.ok() ? std::string("arach-server engine healthy again")
                    : absl::StrCat("arach-server engine UNHEALTHY (liveness and readiness fail until it recovers): ", health.message()));
  });

  int signal_number = WaitForSignal(signal_pipe);
  for (; signal_number == SIGHUP; signal_number = WaitForSignal(signal_pipe)) {
    // SIGHUP: the keys and the HTTPS certificate again; a failed reload keeps what is in use.
    const absl::Status keys_reloaded = (*keys)->Reload();
    if (keys_reloaded.ok()) metrics->DeclareKeys((*keys)->names());
    const absl::Status certificates_reloaded = (*http_server)->ReloadCertificates();
    Say(absl::StrCat("arach-server reloaded on SIGHUP: API keys ",
                     keys_reloaded.ok() ? absl::StrCat((*keys)->size(), " configured") : absl::StrCat("kept (", keys_reloaded.message(), ")"),
                     "; HTTPS certificate ", certificates_reloaded.ok() ? (options.http.tls.enabled() ? "read" : "none")
                                                                        : absl::StrCat("kept (", certificates_reloaded.message(), ")")));
  }

  // The drain: first a lame duck (not ready, still admitting) for drain_announce_ms, so that Kubernetes and
  // proxies polling /ready stop sending before anything is refused; then new calls are refused (HTTP 503,
  // which a proxy retries elsewhere; gRPC closes its listener with GOAWAY, so a proxy's next call finds a
  // refused connection, which it retries too) while the calls in flight finish within the grace period.
  Say(absl::StrCat("arach-server draining (signal ", signal_number, "): ", context.state.in_flight(), " calls in flight, not ready for ",
                   options.drain_announce_ms, " ms, then grace ", options.drain_grace_seconds, " s"));
  const auto drain_start = std::chrono::steady_clock::now();
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
  };
  health_watch.reset();  // the drain owns the serving status from here
  context.state.SetPhase(Phase::kLameDuck);
  server.SetServing(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(options.drain_announce_ms));
  context.state.SetPhase(Phase::kDraining);
  const auto drain_deadline = std::chrono::system_clock::now() + std::chrono::seconds(options.drain_grace_seconds);
  server.BeginShutdown(drain_deadline);
  const bool drained = context.state.WaitIdle(std::chrono::seconds(options.drain_grace_seconds));
  const int64_t drain_ms = ms_since(drain_start);
  server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));  // cancels what is left
  (*engine)->Shutdown();  // finishes the HTTP calls still running (cancelled), so their threads end
  (*http_server)->Stop();
  if (metrics_server) metrics_server->Stop();
  grpc_server->reset();
  context.engine.store(nullptr);
  metrics->AttachEngine(nullptr);
  engine->reset();
  Say(absl::StrCat("arach-server stopped (", drained ? "drained" : "grace period over; remaining calls cancelled", "; calls done after ",
                   drain_ms, " ms, stopped after ", ms_since(drain_start), " ms)"));
  return 0;
}

}  // namespace arach::server
