// arach-server: serves one model over gRPC (arach.v1.Inference, grpc.health.v1.Health, reflection) and
// over HTTP (the OpenAI API, /health, /ready, Prometheus /metrics). SIGTERM/SIGINT drain: health goes NOT_SERVING (for
// --drain_announce_ms calls are still served), then new calls get UNAVAILABLE / 503 and the gRPC listener closes,
// calls in flight finish within --drain_grace_seconds, then the process exits 0. SIGHUP reads the API
// keys and the HTTPS certificate again.
// Flag names may be written with hyphens or underscores (--kv-cache-bytes or --kv_cache_bytes).
// This file only reads the flags; server/serve.cc runs the server.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "engine/bundle/model_bundle.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "cmdline/flag_names.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/backend/cpu/openblas_setup.h"
#include "server/signals.h"
#include "server/serve.h"
#include "server/server_options.h"

ABSL_FLAG(std::string, model, "", "model folder (Hugging Face layout)");
ABSL_FLAG(std::string, adapter, "", "pre-projection + skip adapter (safetensors); enables the skip variants");
ABSL_FLAG(std::string, chat_template, "", "a Jinja chat template file that replaces the model's own (tokenizer_config.json)");
ABSL_FLAG(std::string, arach_hub_embedding, "", "ARACH hub embedding FILE.safetensors:KEY (default: derived from the embeddings)");
ABSL_FLAG(uint64_t, hub_seed, 0, "seed of the derived hub embedding");
ABSL_FLAG(double, arach_offset, -0.5, "default ARACH logit offset b");
ABSL_FLAG(std::string, default_variant, "base", "variant of requests that do not choose: base | arach | skip | arach+skip");
ABSL_FLAG(std::string, experiment, "", "A/B split of requests that choose no variant, e.g. base=50,arach=50");
ABSL_FLAG(std::string, experiment_file, "", "A/B experiment as JSON (name, arms with variant, arach_offset, weight)");
ABSL_FLAG(bool, cuda_graphs, true, "on the GPU, record each decode batch shape's kernels once as a CUDA graph and replay "
          "it (one launch per step instead of one per op)");
ABSL_FLAG(bool, sample_on_device, true, "pick generated tokens where the logits are: on the GPU, copying back only ids and "
          "log-probs; on the CPU, rows sampled in parallel on the backend's threads (the same draws); false: copy every "
          "sampled row's logits out and sample them one by one on the engine's thread (the CPU sampler's exact draws)");
ABSL_FLAG(bool, quality_metrics, true, "compute each generated token's log-prob for arach_generated_token_logprob");
ABSL_FLAG(bool, prompt_perplexity, false, "score every Generate prompt under its variant (arach_prompt_perplexity; "
          "costs a full-vocabulary softmax per prompt token and bypasses the prefix cache)");
ABSL_FLAG(double, diagnostics_sample_rate, 0.0, "share of generation requests (0..1) whose prompt attention is diagnosed "
          "(arach_attention_sink_mass by variant; a diagnosed prompt bypasses the prefix cache)");
ABSL_FLAG(double, shadow_rate, 0.0, "share of generation requests (0..1) scored again, prompt + completion, under "
          "--shadow_variant at low priority (arach_shadow_logprob_delta, arach_shadow_top1_agreement)");
ABSL_FLAG(std::string, shadow_variant, "", "the variant shadow scores compare against, NAME[@OFFSET] (empty: the "
          "experiment's other arm, else base)");
ABSL_FLAG(int, shadow_tokens_beside_live, 0, "shadow-scoring tokens in an engine step that also computes live tokens "
          "(0: shadow work only runs in steps without live work; on a GPU a few dozen cost little)");
ABSL_FLAG(int, shadow_tokens_per_step, 8, "shadow-scoring tokens in any engine step (bounds how long a shadow step can "
          "delay a live request arriving during it)");
ABSL_FLAG(int, shadow_max_in_flight, 64, "shadow scores queued or running at most; more are dropped (arach_shadow_dropped_total)");
ABSL_FLAG(int64_t, responses_store_bytes, 0,
          "memory for the Responses API's stored answers (store: true; retrieved, continued with previous_response_id, "
          "deleted by the key that made them), least recently used dropped first; per replica; 0: nothing stored");
ABSL_FLAG(std::string, replica_name, "", "this replica's name in a fleet (letters, digits, '-', '.'; a pod's name): stored "
          "responses' ids carry it (resp_NAME_...) so that a router can send a conversation's next turn to the replica "
          "that holds it (scripts/fleet.sh); empty: none");
ABSL_FLAG(std::string, device, "cpu", "cpu | cuda (this build's CUDA backend: " ARACH_CUDA_BUILD_NOTE ")");
ABSL_FLAG(int, cpu_threads, 0, "CPU backend threads (0: the CPUs the process may use: affinity mask and cgroup quota)");
ABSL_FLAG(std::string, weight_dtype, "auto", arach::kWeightDTypeFlagHelp);
ABSL_FLAG(std::string, kv_cache_dtype, "auto", arach::kKvCacheDTypeFlagHelp);
ABSL_FLAG(int, block_size, 16, "tokens per KV-cache block");
ABSL_FLAG(int, max_model_len, 0,
          "the context served, in tokens (prompt and generated), at most the model's max_position_embeddings; 0: the model's. "
          "Requests past it are refused naming the field; reported as max_model_len and context_length");
ABSL_FLAG(int64_t, kv_cache_bytes, 0, "KV-cache pool in bytes (0: use --kv_memory_fraction)");
ABSL_FLAG(double, kv_memory_fraction, 0.1, "KV-cache pool as a fraction of the device memory free after the weights");
ABSL_FLAG(int, max_num_seqs, 64, "sequences in the running batch at most");
ABSL_FLAG(int, max_num_batched_tokens, 512, "tokens per engine step (prefill chunks + decodes)");
ABSL_FLAG(int, max_queued_requests, 1024, "requests waiting for admission at most; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(bool, prefix_caching, true, "reuse the K/V of shared prompt prefixes (per variant)");
ABSL_FLAG(int, prediction_draft_tokens, 8,
          "speculative decoding from a request's prediction (OpenAI's predicted outputs): draft tokens a step checks at "
          "most (0..64; 0: predictions are accepted and not used). The answer is the same either way");
ABSL_FLAG(int, speculative_disable_by_batch_size, 0,
          "no speculative drafts in a step where at least this many sequences are running or waiting (0: any number). On a CPU a "
          "step's time grows with its rows beyond a few sequences, and a rejected draft then slows every sequence of the step");
ABSL_FLAG(int, prompt_lookup_tokens, 0,
          "speculative decoding by prompt lookup for every generation: draft tokens a step checks at most, taken from "
          "where the output's last 2-4 tokens occur earlier in the prompt or output (0..64; 0: off). The answer is the "
          "same either way; requests that draft sample on the host");
ABSL_FLAG(int, unhealthy_after_failed_steps, 5,
          "the engine is unhealthy (/live, /health and /ready 503, gRPC health NOT_SERVING, arach_engine_healthy 0) once "
          "this many steps in a row failed their forward, e.g. after a sticky CUDA error; a restart cures it (0: never)");
ABSL_FLAG(double, engine_stall_seconds, 300,
          "the engine is unhealthy while one step has been running for longer than this (a wedged device; 0: never)");
ABSL_FLAG(bool, prefix_cache_per_key, false,
          "each API key's requests reuse only the cached prompt prefixes of that key's requests, so that no tenant can "
          "learn another's prompts from how fast they are answered (a request's cache_salt narrows it further)");
ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC address HOST:PORT (port 0 picks one)");
ABSL_FLAG(std::string, http_listen, "0.0.0.0:8000", "HTTP address HOST:PORT of the OpenAI API, /health, /ready and /metrics");
ABSL_FLAG(int, http_threads, 0,
          "HTTP connections served at once at most (a streamed completion holds one while it runs; threads start as "
          "connections arrive and end when idle); 0: --max_num_seqs + --max_queued_requests + 64, so that the engine's "
          "queue, not the HTTP layer, says when the server is full (429)");
ABSL_FLAG(double, http_request_timeout_seconds, 30,
          "an HTTP request (request line, headers and body) must arrive within this many seconds of its first byte, and "
          "a TLS handshake of the connection's start, else the connection is closed: clients that send slowly "
          "(slowloris) cannot hold the server's connections");
ABSL_FLAG(std::string, served_model_name, "", "the model's name in the APIs (default: the model folder's name)");
ABSL_FLAG(std::vector<std::string>, lora_modules, {}, arach::kLoraModulesFlagHelp);
ABSL_FLAG(int, max_loras, 8, arach::kMaxLorasFlagHelp);
ABSL_FLAG(int, max_cpu_loras, 0, arach::kMaxCpuLorasFlagHelp);
ABSL_FLAG(std::vector<std::string>, classifier_from_token, {}, arach::kClassifierFromTokenFlagHelp);
ABSL_FLAG(int, max_lora_rank, 64, arach::kMaxLoraRankFlagHelp);
ABSL_FLAG(bool, allow_runtime_lora_updating, false,
          "LoRA adapters may be loaded and unloaded while serving: POST /v1/load_lora_adapter {lora_name, lora_path} and "
          "/v1/unload_lora_adapter {lora_name} (vLLM's; a key with the scope `adapters` where keys are configured: the path "
          "is read on the server's file system)");
ABSL_FLAG(std::string, metrics_listen, "", "a separate HOST:PORT serving only /health, /ready and /metrics, plain HTTP on threads of their own, so that probes "
          "and scrapes are answered however busy the API is (default: none; they are on --http_listen)");
ABSL_FLAG(int, drain_grace_seconds, 30, "on SIGTERM, how long calls in flight may take to finish");
ABSL_FLAG(int, drain_announce_ms, 0,
          "on SIGTERM, how long the server stays a lame duck before refusing new calls: /ready says 503 and gRPC "
          "health NOT_SERVING, but calls are still served, so that proxies and Kubernetes polling readiness stop "
          "sending first (set it above the probe interval times its failure threshold; 0: refuse at once)");
ABSL_FLAG(int, max_request_bytes, 16 << 20, "largest request accepted (gRPC message, HTTP body: 413 beyond)");
ABSL_FLAG(int, max_prompt_bytes, 1 << 20, "largest prompt text (INVALID_ARGUMENT beyond)");
ABSL_FLAG(int, max_tokens_limit, 4096, "largest max_tokens a request may ask for");
ABSL_FLAG(int, max_prompt_tokens, 0, "largest prompt in tokens (0 = the model's context)");
ABSL_FLAG(int, max_response_bytes, 16 << 20,
          "largest response message (gRPC), and the bound on the log-probs a non-streamed HTTP answer may carry");
ABSL_FLAG(int, max_concurrent_streams, 100, "concurrent calls per client connection (HTTP/2 streams)");
ABSL_FLAG(int, keepalive_time_ms, 60000, "ping an idle client connection this often to detect dead peers");
ABSL_FLAG(int, keepalive_timeout_ms, 20000, "close a connection whose ping is not answered within this time");
ABSL_FLAG(int, keepalive_min_ping_interval_ms, 10000, "clients pinging more often than this are disconnected");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain of the server: serve gRPC over TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "", "PEM CA bundle: require and verify client certificates (mutual TLS)");
ABSL_FLAG(int, tls_reload_seconds, 10, "the gRPC TLS files are read again this often (certificate rotation)");
ABSL_FLAG(bool, grpc_reflection, true, "serve the gRPC reflection service (for grpcurl; turn off in production)");
ABSL_FLAG(std::vector<std::string>, cors_allowed_origins, {},
          "browser origins that may call the HTTP API (CORS), comma-separated http(s)://host[:port], or * for any; "
          "empty: none (browsers keep cross-origin answers from their pages)");
ABSL_FLAG(std::string, http_tls_cert, "", "PEM certificate chain of the server: serve the HTTP API over HTTPS (read again on SIGHUP)");
ABSL_FLAG(std::string, http_tls_key, "", "PEM private key of --http_tls_cert");
ABSL_FLAG(std::string, http_tls_client_ca, "", "PEM CA bundle: HTTPS clients must present a certificate it signed (mutual TLS)");
ABSL_FLAG(std::string, api_key_file, "", "API keys, one per line NAME:KEY[:SCOPE,SCOPE[:rpm=N,tpm=N,priority=N]] (read again on "
          "SIGHUP); without keys the server is open");
ABSL_FLAG(std::string, api_key, "", "one API key (named \"default\") with every scope and no limits");
ABSL_FLAG(bool, metrics_auth, false, "/metrics needs a valid API key too (where keys are configured)");
ABSL_FLAG(double, priority_aging_seconds, 0, "a waiting request's priority improves by one per this many seconds (0: off)");
ABSL_FLAG(int, max_prompts_per_request, 16, "prompts in one completions request at most");
ABSL_FLAG(std::string, tool_call_parser, "auto", "how the model writes tool calls: auto (from its chat template) | hermes "
          "(Qwen, Hermes) | llama3_json (Llama 3.1/3.2) | mistral (Mistral 7B v0.3, Nemo) | mistral_v11 (Mistral Small "
          "3.1+, Magistral, Devstral, Ministral 3) | pythonic (Llama 3.2 pythonic) | none (requests with tools are refused)");
ABSL_FLAG(bool, exclude_tools_when_tool_choice_none, false, "a request with tool_choice none renders its conversation without "
          "its tools (by default the tools stay in the prompt, as OpenAI's and vLLM's do, and the model is kept from opening a call)");
ABSL_FLAG(bool, trust_request_chat_template, false, "a chat request may bring its own chat template (vLLM's "
          "chat_template parameter; HTTP chat and /tokenize, gRPC Chat), rendered by the same bounded Jinja interpreter; "
          "else such a request is refused");
ABSL_FLAG(std::string, reasoning_parser, "auto", "a reasoning block as reasoning_content: auto (from the chat "
          "template) | qwen3 (<think>...</think>: Qwen3, DeepSeek R1) | mistral ([THINK]...[/THINK]: Magistral) | none");

namespace arach::server {
namespace {

ServerOptions OptionsFromFlags() {
  ServerOptions o;
  o.model_dir = absl::GetFlag(FLAGS_model);
  o.served_model_name = absl::GetFlag(FLAGS_served_model_name);
  o.device = absl::GetFlag(FLAGS_device);
  o.load.block_size = absl::GetFlag(FLAGS_block_size);
  o.load.max_model_len = absl::GetFlag(FLAGS_max_model_len);
  o.load.cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
  o.weight_dtype = absl::GetFlag(FLAGS_weight_dtype);
  o.kv_cache_dtype = absl::GetFlag(FLAGS_kv_cache_dtype);
  o.load.kv_cache_bytes = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_kv_cache_bytes)));
  o.load.kv_memory_fraction = absl::GetFlag(FLAGS_kv_memory_fraction);
  o.load.step_graphs = absl::GetFlag(FLAGS_cuda_graphs);
  o.load.hub_embedding = absl::GetFlag(FLAGS_arach_hub_embedding);
  o.load.hub_seed = absl::GetFlag(FLAGS_hub_seed);
  o.load.adapter = absl::GetFlag(FLAGS_adapter);
  o.lora_modules = absl::GetFlag(FLAGS_lora_modules);
  o.max_loras = absl::GetFlag(FLAGS_max_loras);
  o.max_cpu_loras = absl::GetFlag(FLAGS_max_cpu_loras);
  o.load.classifier_from_token = absl::GetFlag(FLAGS_classifier_from_token);
  o.max_lora_rank = absl::GetFlag(FLAGS_max_lora_rank);
  o.load.chat_template = absl::GetFlag(FLAGS_chat_template);
  o.default_variant = absl::GetFlag(FLAGS_default_variant);
  o.arach_offset = absl::GetFlag(FLAGS_arach_offset);
  o.experiment = absl::GetFlag(FLAGS_experiment);
  o.experiment_file = absl::GetFlag(FLAGS_experiment_file);
  o.engine.max_num_seqs = absl::GetFlag(FLAGS_max_num_seqs);
  o.engine.max_num_batched_tokens = absl::GetFlag(FLAGS_max_num_batched_tokens);
  o.engine.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  o.engine.enable_prefix_caching = absl::GetFlag(FLAGS_prefix_caching);
  o.engine.prediction_draft_tokens = absl::GetFlag(FLAGS_prediction_draft_tokens);
  o.engine.prompt_lookup_tokens = absl::GetFlag(FLAGS_prompt_lookup_tokens);
  o.engine.speculative_disable_by_batch_size = absl::GetFlag(FLAGS_speculative_disable_by_batch_size);
  o.engine.unhealthy_after_failed_steps = absl::GetFlag(FLAGS_unhealthy_after_failed_steps);
  const double stall_seconds = absl::GetFlag(FLAGS_engine_stall_seconds);  // negative or NaN: refused by ValidateOptions
  o.engine.stall_timeout = std::chrono::milliseconds(stall_seconds >= 0 ? static_cast<int64_t>(std::min(stall_seconds, 1e9) * 1000) : -1);
  o.engine.always_compute_logprobs = absl::GetFlag(FLAGS_quality_metrics);
  o.engine.sample_on_device = absl::GetFlag(FLAGS_sample_on_device);
  o.prompt_perplexity = absl::GetFlag(FLAGS_prompt_perplexity);
  o.diagnostics_sample_rate = absl::GetFlag(FLAGS_diagnostics_sample_rate);
  o.shadow_rate = absl::GetFlag(FLAGS_shadow_rate);
  o.shadow_variant = absl::GetFlag(FLAGS_shadow_variant);
  o.shadow_max_in_flight = absl::GetFlag(FLAGS_shadow_max_in_flight);
  o.responses_store_bytes = absl::GetFlag(FLAGS_responses_store_bytes);
  o.replica_name = absl::GetFlag(FLAGS_replica_name);
  o.engine.background_tokens_beside_live = absl::GetFlag(FLAGS_shadow_tokens_beside_live);
  o.engine.background_tokens_per_step = absl::GetFlag(FLAGS_shadow_tokens_per_step);
  o.limits.max_prompt_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_prompt_bytes));
  o.limits.max_response_bytes = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_max_response_bytes)));
  o.limits.max_tokens = absl::GetFlag(FLAGS_max_tokens_limit);
  o.limits.max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens);
  o.grpc.listen = absl::GetFlag(FLAGS_listen);
  o.grpc.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  o.grpc.max_response_bytes = absl::GetFlag(FLAGS_max_response_bytes);
  o.grpc.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  o.grpc.keepalive_time_ms = absl::GetFlag(FLAGS_keepalive_time_ms);
  o.grpc.keepalive_timeout_ms = absl::GetFlag(FLAGS_keepalive_timeout_ms);
  o.grpc.keepalive_min_ping_interval_ms = absl::GetFlag(FLAGS_keepalive_min_ping_interval_ms);
  o.grpc.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_client_ca)};
  o.grpc.tls_reload_seconds = absl::GetFlag(FLAGS_tls_reload_seconds);
  o.grpc.reflection = absl::GetFlag(FLAGS_grpc_reflection);
  o.http.tls = {absl::GetFlag(FLAGS_http_tls_cert), absl::GetFlag(FLAGS_http_tls_key), absl::GetFlag(FLAGS_http_tls_client_ca)};
  o.api_key_file = absl::GetFlag(FLAGS_api_key_file);
  o.api_key = absl::GetFlag(FLAGS_api_key);
  o.metrics_auth = absl::GetFlag(FLAGS_metrics_auth);
  o.prefix_cache_per_key = absl::GetFlag(FLAGS_prefix_cache_per_key);
  o.engine.priority_aging_seconds = absl::GetFlag(FLAGS_priority_aging_seconds);
  o.limits.max_prompts_per_request = absl::GetFlag(FLAGS_max_prompts_per_request);
  o.tool_call_parser = absl::GetFlag(FLAGS_tool_call_parser);
  o.reasoning_parser = absl::GetFlag(FLAGS_reasoning_parser);
  o.exclude_tools_when_tool_choice_none = absl::GetFlag(FLAGS_exclude_tools_when_tool_choice_none);
  o.trust_request_chat_template = absl::GetFlag(FLAGS_trust_request_chat_template);
  o.allow_runtime_lora_updating = absl::GetFlag(FLAGS_allow_runtime_lora_updating);
  o.http.listen = absl::GetFlag(FLAGS_http_listen);
  o.http.max_request_bytes = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_max_request_bytes)));
  o.http.threads = absl::GetFlag(FLAGS_http_threads);
  o.http.request_timeout_seconds = absl::GetFlag(FLAGS_http_request_timeout_seconds);
  o.http.cors_allowed_origins = absl::GetFlag(FLAGS_cors_allowed_origins);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.drain_grace_seconds = absl::GetFlag(FLAGS_drain_grace_seconds);
  o.drain_announce_ms = absl::GetFlag(FLAGS_drain_announce_ms);
  return o;
}

}  // namespace
}  // namespace arach::server

int main(int argc, char** argv) {
  const sigset_t server_signals = arach::server::ServerSignals();
  pthread_sigmask(SIG_BLOCK, &server_signals, nullptr);  // before any thread starts (see signals.h)
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-response is a failed write, not the end of the server
  arach::RestartWithOpenBlasCoreTypeIfNeeded(argv);
  std::vector<std::string> storage;
  std::vector<char*> args = arach::cmdline::NormalizeFlagNames(argc, argv, storage);
  absl::SetProgramUsageMessage(absl::StrCat(
      "arach-server --model DIR [--adapter FILE] [--listen HOST:PORT] [--http_listen HOST:PORT] ...\n"
      "Structured output (response_format, structured_outputs, tool_choice required or named): ",
      arach::StructuredOutputAvailable() ? "" : "unavailable, ", arach::StructuredOutputBackend()));
  absl::ParseCommandLine(argc, args.data());
  absl::StatusOr<arach::server::ServerConfig> config = arach::server::ResolveServerConfig(arach::server::OptionsFromFlags());
  if (!config.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<arach::server::SignalPipe> signal_pipe = arach::server::InstallSignalHandlers();
  if (!signal_pipe.ok()) {
    std::fprintf(stderr, "arach-server: %s\n", signal_pipe.status().ToString().c_str());
    return 1;
  }
  return arach::server::Serve(*config, *signal_pipe);
}
