// arach-cli batch: runs an OpenAI Batch API file (JSON Lines; chat, completions, responses, embeddings, rerank,
// score, classify) against the server's HTTP API, --concurrency requests at a time, and writes OpenAI's batch
// output lines (in input order) to --output or stdout. Every line of the input is checked before anything is sent.
// --resume goes on from --output: its final answers are kept (rewritten first, atomically), the other requests are
// sent and their lines appended. Exit 0 when every request was answered 2xx, 1 when one was not (its line says
// why), 2 for a bad file or option.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/batch_runner.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "engine/core/mapped_file.h"

namespace arach::client {
namespace {

// The contents of the file `flag` names; INVALID_ARGUMENT naming the flag when it cannot be read.
absl::StatusOr<std::string> ReadFlagFile(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", text.status().message()));
  return text;
}

// --resume: the final answers of `path` (none when it does not exist yet), written back to it alone (through a
// temporary file renamed over it, so that a stop now loses nothing).
absl::StatusOr<FinishedLines> KeepFinishedLines(const std::string& path, const std::vector<BatchRequest>& requests) {
  if (!std::filesystem::exists(path)) return FinishedLines{};
  absl::StatusOr<std::string> text = ReadFlagFile("output", path);
  if (!text.ok()) return text.status();
  absl::StatusOr<FinishedLines> finished = ReadFinishedLines(*text, requests);
  if (!finished.ok()) return absl::InvalidArgumentError(absl::StrCat("--resume: ", path, ": ", finished.status().message()));
  const std::string temporary = path + ".resume";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    for (const std::string& line : finished->lines) out << line << '\n';
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("--resume: cannot write ", temporary));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) return absl::UnavailableError(absl::StrCat("--resume: cannot replace ", path, ": ", error.message()));
  return finished;
}

}  // namespace

int RunBatch(const BatchOptions& options) {
  absl::StatusOr<std::string> text = ReadFlagFile("input", options.input);
  if (!text.ok()) return ReportError("batch", text.status());
  absl::StatusOr<std::vector<BatchRequest>> requests = ParseBatchInput(*text);
  if (!requests.ok()) {
    return ReportError("batch", absl::InvalidArgumentError(absl::StrCat(options.input, ": ", requests.status().message())));
  }

  FinishedLines finished;
  if (options.resume) {
    absl::StatusOr<FinishedLines> kept = KeepFinishedLines(options.output, *requests);
    if (!kept.ok()) return ReportError("batch", kept.status());
    finished = *std::move(kept);
  }
  std::vector<BatchRequest> to_send;
  for (BatchRequest& r : *requests) {
    if (!finished.custom_ids.contains(r.custom_id)) to_send.push_back(std::move(r));
  }
  if (options.resume) {
    std::fprintf(stderr, "arach-cli batch: %zu answers kept from %s, %zu requests to send (%d lines dropped to be sent again)\n",
                 finished.lines.size(), options.output.c_str(), to_send.size(), finished.dropped);
  }

  std::ofstream file;
  const bool to_stdout = options.output.empty() || options.output == "-";
  if (!to_stdout) {
    file.open(options.output, std::ios::binary | (options.resume ? std::ios::app : std::ios::trunc));
    if (!file) return ReportError("batch", absl::InvalidArgumentError(absl::StrCat("--output: cannot write ", options.output)));
  }
  const BatchTarget target{options.http, options.connect.api_key, options.connect.tls_ca, options.connect.tls_cert,
                           options.connect.tls_key};
  BatchRunOptions run;
  run.concurrency = options.concurrency;
  run.max_attempts = options.max_attempts;
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  const auto progress = [&](size_t done, size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (options.progress_seconds <= 0 || done == total ||
        std::chrono::duration<double>(now - last_progress).count() < options.progress_seconds) {
      return;
    }
    last_progress = now;
    const double seconds = std::chrono::duration<double>(now - start).count();
    std::fprintf(stderr, "%s\n",
                 absl::StrFormat("arach-cli batch: %zu of %zu written (%.1f%%) in %.1f s, %.1f requests/s", done, total,
                                 100.0 * static_cast<double>(done) / static_cast<double>(total), seconds,
                                 static_cast<double>(done) / seconds)
                     .c_str());
  };
  absl::StatusOr<BatchSummary> summary = SendBatch(to_send, target, run, to_stdout ? std::cout : file, progress);
  if (!summary.ok()) return ReportError("batch", summary.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s\n",
               absl::StrFormat("arach-cli batch: %zu requests in %.1f s: %d succeeded, %d failed (answered 4xx/5xx), %d "
                               "without an answer; %d retries",
                               to_send.size(), seconds, summary->succeeded, summary->failed, summary->errors, summary->retries)
                   .c_str());
  return summary->failed + summary->errors + finished.not_2xx == 0 ? 0 : 1;
}

}  // namespace arach::client
