// The options of each arach-cli command, filled once from the flags (flags.cc) and passed to the command.
// Commands never read flags themselves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arach::client {

struct ConnectOptions {
  std::string server = "127.0.0.1:50051";  // HOST:PORT
  std::string tls_ca;                      // PEM file: connect over TLS, trusting this CA
  std::string tls_cert;                    // PEM file: client certificate (mutual TLS)
  std::string tls_key;                     // PEM file: its key
  std::string tls_server_name;             // name checked against the server's certificate
  std::string api_key;                     // sent as "Authorization: Bearer KEY" (gRPC metadata, HTTP header)
};

// load-lora / unload-lora.
struct LoraAdminOptions {
  ConnectOptions connect;
  std::string name;           // --lora
  std::string path;           // --lora_path (load-lora)
  bool load_inplace = false;  // --load_inplace (load-lora)
};

// The variant fields of a request: unset ones are the server's choice.
struct VariantOptions {
  std::string variant;                 // NAME[@OFFSET]; empty = the server decides
  std::optional<double> arach_offset;  // overrides the offset of `variant` (or the server's)
  std::string experiment_key;          // A/B assignment key
  std::string lora;                    // a LoRA adapter the server loaded (--lora_modules); empty = the base model
};

struct GenerateOptions {
  ConnectOptions connect;
  VariantOptions variant;
  std::string prompt;                // text prompt (or)
  std::vector<int32_t> ids;          // token ids
  int max_tokens = 64;
  int min_tokens = 0;
  double temperature = 0.0;          // 0 = greedy
  int top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int top_logprobs = 0;              // > 0 also asks for each token's log-prob
  double timeout_seconds = 0;        // 0 = no deadline
  bool json = false;                 // print every stream message as JSON
  // Structured output (at most one): a JSON Schema file, a regex, a list of choices, an EBNF grammar file.
  std::string json_schema_file;
  std::string regex;
  std::vector<std::string> choices;
  std::string grammar_file;
  std::string prediction_file;       // the expected output's text (predicted outputs); empty: none
};

struct ScoreOptions {
  ConnectOptions connect;
  VariantOptions variant;
  std::string text;                  // text to score (or)
  std::string file;                  // a file whose text is scored
  bool json = false;
};

struct EmbedOptions {
  ConnectOptions connect;
  VariantOptions variant;
  std::string text;                  // text to embed (or)
  std::string file;                  // a file whose text is embedded
  int dimensions = 0;                // keep the first this many values (then normalize); 0 = all
  bool json = false;
};

struct DiagnosticsOptions {
  ConnectOptions connect;
  std::string text_file;             // the text whose attention is measured
  std::string variants = "base,arach";  // VARIANT[@OFFSET],... scored one after the other
  std::string chart = "diagnostics.svg";   // SVG chart of sink and hub mass per layer ("" = none)
  bool json = false;                 // per layer and head, as JSON
};

struct BenchOptions {
  ConnectOptions connect;
  double rate = 0;                   // Poisson arrivals per second; 0 = closed loop
  int concurrency = 4;               // requests in flight in closed-loop mode
  int num_requests = 32;
  std::string prompt_len = "128";    // N or LOW:HIGH tokens
  std::string output_len = "64";     // N or LOW:HIGH tokens
  std::string variant_mix = "base=1";  // VARIANT[=WEIGHT],...
  uint64_t seed = 1;                 // prompts, lengths and variant draws
  std::string http;                  // HOST:PORT of the OpenAI HTTP API: bench it instead of gRPC Generate
  bool json = false;
};

struct EvalOptions {
  ConnectOptions connect;
  std::string a = "base";            // reference variant, NAME[@OFFSET]
  std::string b = "arach";           // compared variant
  std::string lambada;               // LAMBADA jsonl file
  int lambada_limit = 0;             // lines used (0 = all)
  std::string text;                  // text file for windowed perplexity
  int window = 128;                  // tokens scored per window
  int max_windows = 0;               // 0 = all
  double val_fraction = 0.0;         // leading fraction of the text's tokens skipped
  int latency_requests = 8;          // generations timed per variant (0 = none)
  int latency_max_tokens = 32;
  int bootstrap = 2000;              // resamples
  uint64_t bootstrap_seed = 1;
  bool items = false;                // per-item LAMBADA results in the JSON report
  std::string json_out;              // also write the report here
};

struct AbOptions {
  ConnectOptions connect;
  std::string prompts;               // prompt file, one per line (JSON string or plain text)
  std::string split;                 // client-side VARIANT[=WEIGHT],...; empty = the server's experiment
  int num_requests = 32;             // 0 = one per prompt
  int concurrency = 4;
  int max_tokens = 64;
  double temperature = 0.0;
  uint64_t seed = 1;                 // the client-side split's draws
  int bootstrap = 2000;
  uint64_t bootstrap_seed = 1;
  std::string json_out;
  bool paired = false;               // also score each answer under the first two variants (ab_paired.h)
  std::string prometheus;            // http://HOST:PORT: report the fleet's A/B from Prometheus instead (ab_fleet.h)
};

// batch: an OpenAI Batch API file run against the HTTP API.
struct BatchOptions {
  ConnectOptions connect;            // api_key and the TLS files (the HTTP API's address is `http`)
  std::string input;                 // JSON Lines, one request per line
  std::string output;                // the output lines; empty or "-": stdout
  std::string http = "127.0.0.1:8000";  // http://HOST:PORT or https://HOST:PORT (HOST:PORT: https with TLS files, else http)
  int concurrency = 4;               // requests in flight
  int max_attempts = 5;              // tries of a request the server may answer later (429, 502, 503, no answer)
  bool resume = false;               // go on from `output`: keep its final answers, send only the other requests
  double progress_seconds = 10;      // a progress line on stderr at most this often (0: none)
};

}  // namespace arach::client
