// Everything arach-server is started with (filled from its flags in main.cc), and the checks that turn
// it into a configuration before anything starts: bad options end the process with a message and exit
// status 2, before a port is opened or a model is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/engine.h"
#include "engine/bundle/model_bundle.h"
#include "server/experiment.h"
#include "server/request_limits.h"

namespace arach::server {

struct TlsOptions {
  std::string cert;       // PEM certificate chain: serve over TLS
  std::string key;        // PEM private key of `cert`
  std::string client_ca;  // PEM CA bundle: require and verify client certificates (mutual TLS)
  bool enabled() const { return !cert.empty(); }
};

struct GrpcOptions {
  std::string listen = "0.0.0.0:50051";       // HOST:PORT (port 0 picks one)
  int max_request_bytes = 16 << 20;           // largest request message
  int max_response_bytes = 16 << 20;          // largest response message
  int max_concurrent_streams = 100;           // calls per client connection
  int keepalive_time_ms = 60000;              // ping idle connections this often
  int keepalive_timeout_ms = 20000;           // close a connection whose ping is not answered in time
  int keepalive_min_ping_interval_ms = 10000;  // clients pinging faster are disconnected
  TlsOptions tls;
  int tls_reload_seconds = 10;                // the TLS files are read again this often (gRPC's file watcher)
  bool reflection = true;                     // the gRPC server reflection service (grpcurl); off in production
};

// How the HTTP API listens (--http_listen, --max_request_bytes, --http_threads, --http_tls_*).
struct HttpOptions {
  std::string listen = "0.0.0.0:8000";  // HOST:PORT (port 0 picks one)
  size_t max_request_bytes = 16 << 20;  // larger bodies get 413
  int threads = 0;                      // connections served at once at most (a stream holds one for its length);
                                        // 0: the engine's max_num_seqs + max_queued_requests + 64
  TlsOptions tls;                       // HTTPS (read again on SIGHUP)
  // How long a request (line, headers, body) may take to arrive from its first byte, and a TLS handshake from the
  // connection; then the connection is closed (request_deadline_server.h).
  double request_timeout_seconds = 30;
  // Browser origins that may call the API (CORS, server/http/cors.h): "http(s)://host[:port]" or "*"; empty: none.
  std::vector<std::string> cors_allowed_origins;
};

struct ServerOptions {
  std::string model_dir;              // Hugging Face model folder
  std::string served_model_name;      // the model's name in both APIs (default: the folder's name)
  std::string device = "cpu";         // cpu | cuda
  LoadModelOptions load;              // KV pool, hub embedding, adapter (device filled from `device`)
  std::string default_variant = "base";
  double arach_offset = -0.5;         // default ARACH offset b
  std::string experiment;             // "base=50,arach=50"
  std::string experiment_file;        // the JSON form
  EngineConfig engine;                // batching, queue and prefix cache (no observer yet)
  bool prompt_perplexity = false;     // score every Generate prompt under its variant
  double diagnostics_sample_rate = 0.0;  // share of generation requests whose attention is diagnosed [0, 1]
  double shadow_rate = 0.0;              // share of generation requests scored again under another variant [0, 1]
  std::string shadow_variant;            // that variant (NAME[@OFFSET]); empty: the experiment's other arm, else base
  int shadow_max_in_flight = 64;         // shadow scores queued or running at most (more are dropped)
  int64_t responses_store_bytes = 0;     // memory for the Responses API's stored answers (0: none stored)
  std::string replica_name;              // this replica's name in a fleet, in its responses' ids (empty: none)
  RequestLimits limits;
  GrpcOptions grpc;
  HttpOptions http;                   // the OpenAI API, /health, /ready and /metrics
  std::string metrics_listen;         // HOST:PORT of a separate listener of /health, /ready and /metrics ("" = none)
  std::vector<std::string> lora_modules;  // --lora_modules NAME=PATH entries (resolved into load.lora_modules)
  int max_loras = 8;       // --max_loras (resolved into load.lora_limits)
  int max_cpu_loras = 0;   // --max_cpu_loras (resolved into load.lora_limits; 0: max_loras)
  int max_lora_rank = 64;  // --max_lora_rank (resolved into load.lora_limits)
  std::string weight_dtype = "auto";  // --weight_dtype (resolved into load.weight_dtype)
  std::string kv_cache_dtype = "auto";  // --kv_cache_dtype (resolved into load.kv_cache_dtype)
  int drain_grace_seconds = 30;       // on SIGTERM, how long calls in flight may take
  int drain_announce_ms = 0;          // on SIGTERM, how long readiness is false before new calls are refused
  std::string api_key_file;           // API keys (server/api_keys.h), read again on SIGHUP; empty: none
  std::string api_key;                // one more key, named "default", with every scope; empty: none
  bool metrics_auth = false;          // /metrics wants a valid key too (where keys are configured)
  bool prefix_cache_per_key = false;  // each key's requests reuse only its own cached prompt prefixes
  std::string tool_call_parser = "auto";  // how chat turns write tool calls: auto (the template's) | hermes | llama3_json | mistral | mistral_v11 | pythonic | none
  std::string reasoning_parser = "auto";  // a reasoning block as reasoning_content: auto (the template's) | qwen3 | mistral | none
  bool exclude_tools_when_tool_choice_none = false;
  bool allow_runtime_lora_updating = false;  // LoRA adapters may be loaded and unloaded over HTTP (scope `adapters`)
  bool trust_request_chat_template = false;  // a chat request may bring its own chat template (else refused)  // tool_choice none leaves the tools out of the prompt (else they stay in it)
};

// What the options resolve to.
struct ServerConfig {
  ServerOptions options;  // served_model_name filled in
  DeviceKind device = DeviceKind::kCpu;
  Variant default_variant;
  std::optional<Experiment> experiment;
  std::optional<Variant> shadow_variant;  // --shadow_variant, resolved
};

// INVALID_ARGUMENT naming the flag: no model, a served model name with ':' (it separates the variant), an unknown
// device or variant, a skip variant (default or experiment arm) without --adapter, both experiment forms at once,
// an unreadable experiment, a TLS certificate without its key (or a client CA without both), a negative aging
// time or prompt cap, an unknown tool-call or reasoning parser, negative HTTP threads. http.threads 0 is resolved.
absl::StatusOr<ServerConfig> ResolveServerConfig(const ServerOptions& options);

}  // namespace arach::server
