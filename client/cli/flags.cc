#include "client/cli/flags.h"

#include <cmath>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "server address HOST:PORT");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA bundle of the server's certificate: connect over TLS");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "", "name to check the server's certificate against (default: the host)");
ABSL_FLAG(std::string, api_key, "", "API key of the server (default: $ARACH_API_KEY)");
ABSL_FLAG(std::string, prompt, "", "prompt text");
ABSL_FLAG(std::string, ids, "", "prompt token ids, comma separated");
ABSL_FLAG(std::string, text, "", "text to score (score), or a text file (eval: windowed perplexity; diagnostics: the text measured)");
ABSL_FLAG(std::string, variants, "base,arach", "variants to compare, VARIANT[@OFFSET],...");
ABSL_FLAG(std::string, chart, "diagnostics.svg", "SVG chart of attention per layer (empty: none)");
ABSL_FLAG(std::string, file, "", "text file to score (score) or embed (embed)");
ABSL_FLAG(int, dimensions, 0, "keep the embedding's first N values, then normalize (0 = all of the model's)");
ABSL_FLAG(int, max_tokens, 64, "tokens to generate");
ABSL_FLAG(int, min_tokens, 0, "tokens before stop conditions apply");
ABSL_FLAG(double, temperature, 0.0, "sampling temperature (0 = greedy)");
ABSL_FLAG(int, top_k, 0, "top-k (0 = off)");
ABSL_FLAG(double, top_p, 1.0, "top-p");
ABSL_FLAG(double, min_p, 0.0, "min-p");
ABSL_FLAG(double, repetition_penalty, 1.0, "repetition penalty");
ABSL_FLAG(int64_t, seed, -1, "sampling seed (-1 = none)");
ABSL_FLAG(std::vector<std::string>, stop, {}, "stop strings, comma separated");
ABSL_FLAG(bool, ignore_eos, false, "do not stop at end-of-sequence");
ABSL_FLAG(int, top_logprobs, 0, "log-probs of this many alternatives per token");
ABSL_FLAG(std::string, variant, "", "base | arach | skip | arach+skip, optionally @OFFSET (empty: the server decides)");
ABSL_FLAG(std::string, lora, "",
          "a LoRA adapter by name: the one a request runs with (generate, score, embed; empty: the base model), or the one "
          "to load or unload (load-lora, unload-lora)");
ABSL_FLAG(std::string, lora_path, "", "the PEFT folder of the adapter to load, on the server's file system");
ABSL_FLAG(bool, load_inplace, false, "replace the adapter loaded under --lora (requests in flight finish on the old weights)");
ABSL_FLAG(double, arach_offset, NAN, "ARACH logit offset b (unset: the variant's or the server's)");
ABSL_FLAG(std::string, experiment_key, "", "A/B assignment key");
ABSL_FLAG(double, timeout, 0, "deadline in seconds (0 = none)");
ABSL_FLAG(bool, json, false, "print JSON");
ABSL_FLAG(double, rate, 0, "Poisson arrival rate in requests/s (0 = closed loop with --concurrency)");
ABSL_FLAG(int, concurrency, 4, "requests in flight (bench: closed loop)");
ABSL_FLAG(int, num_requests, 32, "requests to send (ab: 0 = one per prompt)");
ABSL_FLAG(std::string, prompt_len, "128", "prompt tokens, N or LOW:HIGH");
ABSL_FLAG(std::string, output_len, "64", "generated tokens, N or LOW:HIGH");
ABSL_FLAG(std::string, variant_mix, "base=1", "variants and weights, VARIANT[=WEIGHT],... e.g. base=1,arach=1");
ABSL_FLAG(std::string, http, "",
          "the OpenAI HTTP API's address, HOST:PORT (batch: also http:// or https://URL; default 127.0.0.1:8000); bench: "
          "send the requests there (streamed /v1/completions) instead of gRPC");
ABSL_FLAG(std::string, input, "", "batch: the OpenAI Batch API input file (JSON Lines: custom_id, method, url, body)");
ABSL_FLAG(std::string, output, "", "batch: the output file, one line per request in input order (empty or -: stdout)");
ABSL_FLAG(bool, resume, false,
          "batch: go on from --output's lines: keep each final answer, send only the other requests and append theirs");
ABSL_FLAG(double, progress_seconds, 10, "batch: a progress line on stderr at most this often (0: none)");
ABSL_FLAG(int, max_attempts, 5, "batch: tries of a request answered 429, 502 or 503 or not answered at all");
ABSL_FLAG(uint64_t, bench_seed, 1, "seed of the generated prompts, lengths and variant draws");
ABSL_FLAG(uint64_t, bootstrap_seed, 1, "seed of the bootstrap resamples");
ABSL_FLAG(std::string, a, "base", "the reference variant, VARIANT[@OFFSET]");
ABSL_FLAG(std::string, b, "arach", "the variant compared with it, VARIANT[@OFFSET]");
ABSL_FLAG(std::string, lambada, "", "LAMBADA jsonl file ({\"text\": ...} per line)");
ABSL_FLAG(int, lambada_limit, 0, "LAMBADA lines to use (0 = all)");
ABSL_FLAG(int, window, 128, "tokens scored per text window");
ABSL_FLAG(int, max_windows, 0, "text windows to score (0 = all)");
ABSL_FLAG(double, val_fraction, 0.0, "skip this leading fraction of the text's tokens (0.9 = the fixtures' validation split)");
ABSL_FLAG(int, latency_requests, 8, "generations timed per variant (0 = none)");
ABSL_FLAG(int, latency_max_tokens, 32, "tokens per timed generation");
ABSL_FLAG(int, bootstrap, 2000, "bootstrap resamples");
ABSL_FLAG(bool, items, false, "include per-item LAMBADA results in the JSON report");
ABSL_FLAG(std::string, json_out, "", "also write the report as JSON to this file");
ABSL_FLAG(std::string, prompts, "", "prompt file, one prompt per line (a JSON string, or plain text)");
ABSL_FLAG(std::string, prometheus, "",
          "ab: instead of replaying prompts, report the A/B of the whole fleet from this Prometheus (http://HOST:PORT), "
          "which scrapes every replica and loads deploy/prometheus/recording-rules.yml");
ABSL_FLAG(bool, paired, false, "ab: also score each answer (prompt + completion) under the first two variants and compare "
          "them on the same text (mean log-prob difference and top-1 agreement with bootstrap intervals)");
ABSL_FLAG(std::string, split, "", "client-side split VARIANT[=WEIGHT],...; empty = let the server's experiment assign");
ABSL_FLAG(std::string, json_schema, "", "structured output: the text must match the JSON Schema in this file");
ABSL_FLAG(std::string, regex, "", "structured output: the text must match this regular expression");
ABSL_FLAG(std::vector<std::string>, choice, {}, "structured output: the text is one of these, comma separated");
ABSL_FLAG(std::string, prediction_file, "",
          "generate: the text the output is expected to be, mostly, in this file (OpenAI's predicted outputs: a file "
          "being edited); the server checks drafts from it, the output is the same with or without it");
ABSL_FLAG(std::string, grammar, "", "structured output: the text must match the EBNF grammar (root rule `root`) in this file");

namespace arach::client {
namespace {

const std::vector<std::string> kConnectFlags = {"server", "tls_ca", "tls_cert", "tls_key", "tls_server_name", "api_key"};

std::vector<std::string> With(std::vector<std::string> own) {
  own.insert(own.end(), kConnectFlags.begin(), kConnectFlags.end());
  return own;
}

VariantOptions VariantOptionsFromFlags() {
  VariantOptions v;
  v.variant = absl::GetFlag(FLAGS_variant);
  if (!std::isnan(absl::GetFlag(FLAGS_arach_offset))) v.arach_offset = absl::GetFlag(FLAGS_arach_offset);
  v.experiment_key = absl::GetFlag(FLAGS_experiment_key);
  v.lora = absl::GetFlag(FLAGS_lora);
  return v;
}

}  // namespace

const std::vector<cmdline::Subcommand>& CliCommands() {
  static const std::vector<cmdline::Subcommand> commands = {
      {"generate", "stream a generation", With({"prompt", "ids", "max_tokens", "min_tokens", "temperature", "top_k", "top_p",
                                                "min_p", "repetition_penalty", "seed", "stop", "ignore_eos", "top_logprobs",
                                                "variant", "arach_offset", "experiment_key", "lora", "timeout", "json", "json_schema", "regex",
                                                "choice", "grammar", "prediction_file"})},
      {"score", "per-token log-probs and perplexity of a text", With({"text", "file", "variant", "arach_offset", "experiment_key", "lora", "json"})},
      {"embed", "an embedding of a text: its hidden states pooled as the model's folder says, at unit length (as /v1/embeddings)",
       With({"text", "file", "dimensions", "variant", "arach_offset", "experiment_key", "lora", "json"})},
      {"diagnostics", "attention diagnostics: attention on the first token (sink) and on the hub, per layer, by variant; SVG chart",
       With({"text", "variants", "chart", "json"})},
      {"info", "describe the served model", With({})},
      {"load-lora", "load a LoRA adapter into a server run with --allow_runtime_lora_updating",
       With({"lora", "lora_path", "load_inplace"})},
      {"unload-lora", "unload a LoRA adapter loaded while serving or at start-up", With({"lora"})},
      {"health", "the server's health (exit 0 when SERVING)", With({})},
      {"bench", "load generator: throughput, TTFT, TPOT per variant",
       With({"rate", "concurrency", "num_requests", "prompt_len", "output_len", "variant_mix", "bench_seed", "http", "json"})},
      {"eval", "compare two variants on LAMBADA, text perplexity and latency",
       With({"a", "b", "lambada", "lambada_limit", "text", "window", "max_windows", "val_fraction", "latency_requests",
             "latency_max_tokens", "bootstrap", "bootstrap_seed", "items", "json_out"})},
      {"ab", "replay prompts under a variant split and compare the variants",
       With({"prompts", "split", "num_requests", "concurrency", "max_tokens", "temperature", "bench_seed", "bootstrap",
             "bootstrap_seed", "json_out", "paired", "prometheus"})},
      {"batch", "run an OpenAI Batch API file (JSON Lines) against the HTTP API; one output line per request, in order",
       {"input", "output", "resume", "http", "concurrency", "max_attempts", "progress_seconds", "api_key", "tls_ca", "tls_cert",
        "tls_key"}},
  };
  return commands;
}

ConnectOptions ConnectOptionsFromFlags() {
  std::string api_key = absl::GetFlag(FLAGS_api_key);
  if (const char* env = std::getenv("ARACH_API_KEY"); api_key.empty() && env != nullptr) api_key = env;
  return {absl::GetFlag(FLAGS_server), absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
          absl::GetFlag(FLAGS_tls_server_name), std::move(api_key)};
}

LoraAdminOptions LoraAdminOptionsFromFlags() {
  return {ConnectOptionsFromFlags(), absl::GetFlag(FLAGS_lora), absl::GetFlag(FLAGS_lora_path), absl::GetFlag(FLAGS_load_inplace)};
}

absl::StatusOr<GenerateOptions> GenerateOptionsFromFlags() {
  GenerateOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.variant = VariantOptionsFromFlags();
  o.prompt = absl::GetFlag(FLAGS_prompt);
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_ids), ',', absl::SkipWhitespace())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) return absl::InvalidArgumentError(absl::StrCat("--ids: \"", part, "\" is not an integer"));
    o.ids.push_back(id);
  }
  o.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  o.min_tokens = absl::GetFlag(FLAGS_min_tokens);
  o.temperature = absl::GetFlag(FLAGS_temperature);
  o.top_k = absl::GetFlag(FLAGS_top_k);
  o.top_p = absl::GetFlag(FLAGS_top_p);
  o.min_p = absl::GetFlag(FLAGS_min_p);
  o.repetition_penalty = absl::GetFlag(FLAGS_repetition_penalty);
  if (absl::GetFlag(FLAGS_seed) >= 0) o.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  o.stop = absl::GetFlag(FLAGS_stop);
  o.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  o.top_logprobs = absl::GetFlag(FLAGS_top_logprobs);
  o.timeout_seconds = absl::GetFlag(FLAGS_timeout);
  o.json = absl::GetFlag(FLAGS_json);
  o.json_schema_file = absl::GetFlag(FLAGS_json_schema);
  o.regex = absl::GetFlag(FLAGS_regex);
  o.choices = absl::GetFlag(FLAGS_choice);
  o.grammar_file = absl::GetFlag(FLAGS_grammar);
  o.prediction_file = absl::GetFlag(FLAGS_prediction_file);
  const int constraints = !o.json_schema_file.empty() + !o.regex.empty() + !o.choices.empty() + !o.grammar_file.empty();
  if (constraints > 1) return absl::InvalidArgumentError("give one of --json_schema, --regex, --choice, --grammar");
  return o;
}

ScoreOptions ScoreOptionsFromFlags() {
  ScoreOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.variant = VariantOptionsFromFlags();
  o.text = absl::GetFlag(FLAGS_text);
  o.file = absl::GetFlag(FLAGS_file);
  o.json = absl::GetFlag(FLAGS_json);
  return o;
}

EmbedOptions EmbedOptionsFromFlags() {
  EmbedOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.variant = VariantOptionsFromFlags();
  o.text = absl::GetFlag(FLAGS_text);
  o.file = absl::GetFlag(FLAGS_file);
  o.dimensions = absl::GetFlag(FLAGS_dimensions);
  o.json = absl::GetFlag(FLAGS_json);
  return o;
}

BenchOptions BenchOptionsFromFlags() {
  BenchOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.rate = absl::GetFlag(FLAGS_rate);
  o.concurrency = absl::GetFlag(FLAGS_concurrency);
  o.num_requests = absl::GetFlag(FLAGS_num_requests);
  o.prompt_len = absl::GetFlag(FLAGS_prompt_len);
  o.output_len = absl::GetFlag(FLAGS_output_len);
  o.variant_mix = absl::GetFlag(FLAGS_variant_mix);
  o.seed = absl::GetFlag(FLAGS_bench_seed);
  o.http = absl::GetFlag(FLAGS_http);
  o.json = absl::GetFlag(FLAGS_json);
  return o;
}

EvalOptions EvalOptionsFromFlags() {
  EvalOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.a = absl::GetFlag(FLAGS_a);
  o.b = absl::GetFlag(FLAGS_b);
  o.lambada = absl::GetFlag(FLAGS_lambada);
  o.lambada_limit = absl::GetFlag(FLAGS_lambada_limit);
  o.text = absl::GetFlag(FLAGS_text);
  o.window = absl::GetFlag(FLAGS_window);
  o.max_windows = absl::GetFlag(FLAGS_max_windows);
  o.val_fraction = absl::GetFlag(FLAGS_val_fraction);
  o.latency_requests = absl::GetFlag(FLAGS_latency_requests);
  o.latency_max_tokens = absl::GetFlag(FLAGS_latency_max_tokens);
  o.bootstrap = absl::GetFlag(FLAGS_bootstrap);
  o.bootstrap_seed = absl::GetFlag(FLAGS_bootstrap_seed);
  o.items = absl::GetFlag(FLAGS_items);
  o.json_out = absl::GetFlag(FLAGS_json_out);
  return o;
}

DiagnosticsOptions DiagnosticsOptionsFromFlags() {
  DiagnosticsOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.text_file = absl::GetFlag(FLAGS_text);
  o.variants = absl::GetFlag(FLAGS_variants);
  o.chart = absl::GetFlag(FLAGS_chart);
  o.json = absl::GetFlag(FLAGS_json);
  return o;
}

absl::StatusOr<BatchOptions> BatchOptionsFromFlags() {
  BatchOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.input = absl::GetFlag(FLAGS_input);
  o.output = absl::GetFlag(FLAGS_output);
  if (!absl::GetFlag(FLAGS_http).empty()) o.http = absl::GetFlag(FLAGS_http);
  o.concurrency = absl::GetFlag(FLAGS_concurrency);
  o.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  o.resume = absl::GetFlag(FLAGS_resume);
  o.progress_seconds = absl::GetFlag(FLAGS_progress_seconds);
  if (!(o.progress_seconds >= 0)) return absl::InvalidArgumentError("--progress_seconds: must be >= 0");
  if (o.input.empty()) return absl::InvalidArgumentError("--input: give the batch file");
  if (o.concurrency < 1 || o.concurrency > 1024) return absl::InvalidArgumentError("--concurrency: must be 1..1024");
  if (o.max_attempts < 1 || o.max_attempts > 100) return absl::InvalidArgumentError("--max_attempts: must be 1..100");
  if (o.resume && (o.output.empty() || o.output == "-")) {
    return absl::InvalidArgumentError("--resume: give the --output file to go on from");
  }
  return o;
}

AbOptions AbOptionsFromFlags() {
  AbOptions o;
  o.connect = ConnectOptionsFromFlags();
  o.prompts = absl::GetFlag(FLAGS_prompts);
  o.split = absl::GetFlag(FLAGS_split);
  o.num_requests = absl::GetFlag(FLAGS_num_requests);
  o.concurrency = absl::GetFlag(FLAGS_concurrency);
  o.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  o.temperature = absl::GetFlag(FLAGS_temperature);
  o.seed = absl::GetFlag(FLAGS_bench_seed);
  o.bootstrap = absl::GetFlag(FLAGS_bootstrap);
  o.bootstrap_seed = absl::GetFlag(FLAGS_bootstrap_seed);
  o.json_out = absl::GetFlag(FLAGS_json_out);
  o.paired = absl::GetFlag(FLAGS_paired);
  o.prometheus = absl::GetFlag(FLAGS_prometheus);
  return o;
}

}  // namespace arach::client
