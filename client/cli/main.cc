// arach-cli: talks to arach-server.
//   arach-cli generate --server HOST:PORT --prompt TEXT [--max_tokens N] [--variant arach] [--temperature T] ...
//   arach-cli score    --server HOST:PORT (--text TEXT | --file F) [--variant skip] [--json]
//   arach-cli info     --server HOST:PORT
//   arach-cli health   --server HOST:PORT
//   arach-cli eval     --server HOST:PORT --a base --b arach [--lambada F --lambada_limit N] [--text F --window W]
//                      [--latency_requests N] [--json_out F]
//   arach-cli ab       --server HOST:PORT --prompts F [--split base=50,arach=50] [--concurrency C] [--json_out F]
//   arach-cli bench    --server HOST:PORT (--rate R | --concurrency C) --num_requests N
//                      [--prompt_len 128 | 64:256] [--output_len 64] [--variant_mix base=1,arach=1] [--json]
// Flag names may be written with hyphens or underscores.
#include <cmath>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/cli/cli_commands.h"
#include "tools/common/flag_names.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "server address HOST:PORT");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA bundle of the server's certificate: connect over TLS");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "", "name to check the server's certificate against (default: the host)");
ABSL_FLAG(std::string, prompt, "", "generate: prompt text");
ABSL_FLAG(std::string, ids, "", "generate: prompt token ids, comma separated");
ABSL_FLAG(std::string, text, "", "score: text to score");
ABSL_FLAG(std::string, file, "", "score: text file to score");
ABSL_FLAG(int, max_tokens, 64, "generate: tokens to generate");
ABSL_FLAG(int, min_tokens, 0, "generate: tokens before stop conditions apply");
ABSL_FLAG(double, temperature, 0.0, "generate: 0 = greedy");
ABSL_FLAG(int, top_k, 0, "generate: top-k (0 = off)");
ABSL_FLAG(double, top_p, 1.0, "generate: top-p");
ABSL_FLAG(double, min_p, 0.0, "generate: min-p");
ABSL_FLAG(double, repetition_penalty, 1.0, "generate: repetition penalty");
ABSL_FLAG(int64_t, seed, -1, "generate: sampling seed (-1 = none)");
ABSL_FLAG(std::vector<std::string>, stop, {}, "generate: stop strings, comma separated");
ABSL_FLAG(bool, ignore_eos, false, "generate: do not stop at end-of-sequence");
ABSL_FLAG(int, top_logprobs, 0, "generate: log-probs of this many alternatives per token");
ABSL_FLAG(std::string, variant, "", "base | arach | skip | arach+skip (empty: the server decides)");
ABSL_FLAG(double, arach_offset, NAN, "ARACH logit offset b (unset: the server's)");
ABSL_FLAG(std::string, experiment_key, "", "A/B assignment key");
ABSL_FLAG(double, timeout, 0, "deadline in seconds (0 = none)");
ABSL_FLAG(bool, json, false, "print JSON");
ABSL_FLAG(double, rate, 0, "bench: Poisson arrival rate in requests/s (0 = closed loop with --concurrency)");
ABSL_FLAG(int, concurrency, 4, "bench: requests in flight in closed-loop mode");
ABSL_FLAG(int, num_requests, 32, "bench: requests to send");
ABSL_FLAG(std::string, prompt_len, "128", "bench: prompt tokens, N or LOW:HIGH");
ABSL_FLAG(std::string, output_len, "64", "bench: generated tokens, N or LOW:HIGH");
ABSL_FLAG(std::string, variant_mix, "base=1", "bench: variants and weights, e.g. base=1,arach=1");
ABSL_FLAG(uint64_t, bench_seed, 1, "bench, ab, eval: seed of prompts, lengths, variant draws and bootstrap");
ABSL_FLAG(std::string, a, "base", "eval: the reference variant, VARIANT[@OFFSET]");
ABSL_FLAG(std::string, b, "arach", "eval: the variant compared with it, VARIANT[@OFFSET]");
ABSL_FLAG(std::string, lambada, "", "eval: LAMBADA jsonl file ({\"text\": ...} per line)");
ABSL_FLAG(int, lambada_limit, 0, "eval: LAMBADA lines to use (0 = all)");
ABSL_FLAG(int, window, 128, "eval: tokens scored per text window");
ABSL_FLAG(int, max_windows, 0, "eval: text windows to score (0 = all)");
ABSL_FLAG(double, val_fraction, 0.0, "eval: skip this leading fraction of the text's tokens (0.9 = the fixtures' validation split)");
ABSL_FLAG(int, latency_requests, 8, "eval: generations timed per variant (0 = none)");
ABSL_FLAG(int, latency_max_tokens, 32, "eval: tokens per timed generation");
ABSL_FLAG(int, bootstrap, 2000, "eval, ab: bootstrap resamples");
ABSL_FLAG(bool, items, false, "eval: include per-item LAMBADA results in the JSON report");
ABSL_FLAG(std::string, json_out, "", "eval, ab: also write the report as JSON to this file");
ABSL_FLAG(std::string, prompts, "", "ab: prompt file, one prompt per line (a JSON string, or plain text)");
ABSL_FLAG(std::string, split, "", "ab: client-side split VARIANT=WEIGHT,...; empty = let the server's experiment assign");

int main(int argc, char** argv) {
  std::vector<std::string> storage;
  std::vector<char*> args = arach::tools::NormalizeFlagNames(argc, argv, storage);
  absl::SetProgramUsageMessage("arach-cli generate|score|info|health|bench|eval|ab --server HOST:PORT [flags]");
  std::vector<char*> positional = absl::ParseCommandLine(argc, args.data());
  if (positional.size() != 2) {
    std::fprintf(stderr, "%s\n", std::string(absl::ProgramUsageMessage()).c_str());
    return 2;
  }
  const std::string command = positional[1];
  if (command == "generate") return arach::client::RunGenerate();
  if (command == "score") return arach::client::RunScore();
  if (command == "info") return arach::client::RunInfo();
  if (command == "health") return arach::client::RunHealth();
  if (command == "bench") return arach::client::RunBench();
  if (command == "eval") return arach::client::RunEval();
  if (command == "ab") return arach::client::RunAb();
  std::fprintf(stderr, "arach-cli: unknown command \"%s\" (generate, score, info, health, bench, eval, ab)\n", command.c_str());
  return 2;
}
