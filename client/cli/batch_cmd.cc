// arach-cli batch: runs an OpenAI Batch API file (JSON Lines; chat, completions, responses, embeddings, rerank,
// score, classify) against the server's HTTP API, --concurrency requests at a time, and writes OpenAI's batch
// output lines (in input order) to --output or stdout. Every line of the input is checked before anything is sent.
// Exit 0 when every request was answered 2xx, 1 when one was not (its line says why), 2 for a bad file or option.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/batch_runner.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"

namespace arach::client {
namespace {

absl::StatusOr<std::string> ReadInputFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--input: cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("--input: cannot read ", path));
  return text.str();
}

}  // namespace

int RunBatch(const BatchOptions& options) {
  absl::StatusOr<std::string> text = ReadInputFile(options.input);
  if (!text.ok()) return ReportError("batch", text.status());
  absl::StatusOr<std::vector<BatchRequest>> requests = ParseBatchInput(*text);
  if (!requests.ok()) return ReportError("batch", absl::InvalidArgumentError(absl::StrCat(options.input, ": ", requests.status().message())));

  std::ofstream file;
  const bool to_stdout = options.output.empty() || options.output == "-";
  if (!to_stdout) {
    file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!file) return ReportError("batch", absl::InvalidArgumentError(absl::StrCat("--output: cannot write ", options.output)));
  }
  const BatchTarget target{options.http, options.connect.api_key, options.connect.tls_ca, options.connect.tls_cert,
                           options.connect.tls_key};
  BatchRunOptions run;
  run.concurrency = options.concurrency;
  run.max_attempts = options.max_attempts;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<BatchSummary> summary = SendBatch(*requests, target, run, to_stdout ? std::cout : file);
  if (!summary.ok()) return ReportError("batch", summary.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s\n",
               absl::StrFormat("arach-cli batch: %zu requests in %.1f s: %d succeeded, %d failed (answered 4xx/5xx), %d "
                               "without an answer; %d retries",
                               requests->size(), seconds, summary->succeeded, summary->failed, summary->errors, summary->retries)
                   .c_str());
  return summary->failed + summary->errors == 0 ? 0 : 1;
}

}  // namespace arach::client
