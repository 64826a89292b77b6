// arach-cli bench: a load generator against a running server. Requests arrive as a Poisson process
// (--rate R per second) or with a fixed number in flight (--concurrency C); prompt and output lengths
// are fixed or uniform ranges (--prompt_len 64:256); variants follow --variant_mix. Prints throughput,
// TTFT / TPOT / end-to-end percentiles (measured by the client) and errors, overall and per variant.
// With --http HOST:PORT the same requests go to the OpenAI HTTP API (streamed /v1/completions) instead of
// gRPC Generate, so that the two APIs can be compared; the model is still described over gRPC (--server).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/http_completion.h"
#include "client/cli/load_loop.h"
#include "client/cli/stats.h"
#include "client/cli/stream_timing.h"
#include "client/cli/variant_arg.h"
#include "engine/variant/variant_mix.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Range {
  int low = 0, high = 0;
  int Draw(std::mt19937_64& rng) const { return low + static_cast<int>(rng() % (high - low + 1)); }
};

bool ParseRange(const std::string& text, Range* out) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() == 1 && absl::SimpleAtoi(parts[0], &out->low)) {
    out->high = out->low;
    return out->low > 0;
  }
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], &out->low) && absl::SimpleAtoi(parts[1], &out->high) &&
         out->low > 0 && out->high >= out->low;
}

struct Outcome {
  std::string variant;
  std::string error;  // "" when the stream completed; "grpc 8", "http 429", ...
  double ttft = 0, tpot = 0, e2e = 0;
  int tokens = 0;
};

nlohmann::json Summarise(const std::vector<Outcome>& outcomes, double seconds) {
  std::vector<double> ttft, tpot, e2e;
  int ok = 0;
  int64_t tokens = 0;
  std::map<std::string, int> errors;
  for (const Outcome& o : outcomes) {
    if (!o.error.empty()) {
      ++errors[o.error];
      continue;
    }
    ++ok;
    tokens += o.tokens;
    ttft.push_back(o.ttft);
    e2e.push_back(o.e2e);
    if (o.tokens > 1) tpot.push_back(o.tpot);
  }
  auto pct = [](const std::vector<double>& v) {
    return nlohmann::json{{"p50", Percentile(v, 0.5)}, {"p90", Percentile(v, 0.9)}, {"p99", Percentile(v, 0.99)}};
  };
  return {{"requests", outcomes.size()},     {"completed", ok},
          {"errors_by_code", errors},        {"requests_per_second", ok / seconds},
          {"output_tokens_per_second", tokens / seconds}, {"ttft_seconds", pct(ttft)},
          {"tpot_seconds", pct(tpot)},       {"e2e_seconds", pct(e2e)}};
}

void PrintRow(const std::string& name, const nlohmann::json& s) {
  std::printf("%-11s %6d/%-6d %8.2f %10.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f %9.3f %9.3f %s\n", name.c_str(),
              s["completed"].get<int>(), static_cast<int>(s["requests"].get<size_t>()), s["requests_per_second"].get<double>(),
              s["output_tokens_per_second"].get<double>(), 1e3 * s["ttft_seconds"]["p50"].get<double>(),
              1e3 * s["ttft_seconds"]["p90"].get<double>(), 1e3 * s["ttft_seconds"]["p99"].get<double>(),
              1e3 * s["tpot_seconds"]["p50"].get<double>(), 1e3 * s["tpot_seconds"]["p90"].get<double>(),
              1e3 * s["tpot_seconds"]["p99"].get<double>(), s["e2e_seconds"]["p50"].get<double>(),
              s["e2e_seconds"]["p99"].get<double>(), s["errors_by_code"].dump().c_str());
}

}  // namespace

int RunBench(const BenchOptions& o) {
  Range prompt_len, output_len;
  if (!ParseRange(o.prompt_len, &prompt_len) || !ParseRange(o.output_len, &output_len)) {
    return ReportError("bench", absl::InvalidArgumentError("--prompt_len / --output_len must be N or LOW:HIGH"));
  }
  absl::StatusOr<std::vector<WeightedVariant>> mix = ParseVariantMix(o.variant_mix);
  if (!mix.ok()) return ReportError("bench", absl::InvalidArgumentError(absl::StrCat("--variant_mix: ", mix.status().message())));
  std::vector<double> weights;
  for (const WeightedVariant& entry : *mix) weights.push_back(entry.weight);
  absl::StatusOr<std::unique_ptr<ArachClient>> connected = Connect(o.connect);
  if (!connected.ok()) return ReportError("bench", connected.status());
  ArachClient& client = **connected;
  arach::v1::ModelInfo info;
  if (const grpc::Status s = client.GetModelInfo(&info); !s.ok()) return ReportRpcFailure("bench", s);
  const int num_requests = o.num_requests;
  std::mt19937_64 rng(o.seed);
  std::vector<arach::v1::GenerateRequest> requests(num_requests);
  std::vector<std::string> variant_of(num_requests);
  for (int i = 0; i < num_requests; ++i) {
    const WeightedVariant& entry = (*mix)[PickWeighted(weights, std::uniform_real_distribution<double>(0, 1)(rng))];
    variant_of[i] = entry.label;
    arach::v1::GenerateRequest& r = requests[i];
    *r.mutable_variant() = ToVariantSpec(entry.choice);
    const int len = std::min<int>(prompt_len.Draw(rng), info.context_length() - output_len.high);
    for (int t = 0; t < std::max(1, len); ++t) r.mutable_token_ids()->add_ids(static_cast<int32_t>(rng() % info.vocab_size()));
    r.set_max_tokens(output_len.Draw(rng));
    r.set_ignore_eos(true);
    r.mutable_sampling()->set_temperature(0.0f);
  }

  std::vector<Outcome> outcomes(num_requests);
  auto run_one = [&](int i) {
    Outcome& out = outcomes[i];
    out.variant = variant_of[i];
    StreamTimer timer;
    if (o.http.empty()) {
      const grpc::Status s = client.Generate(requests[i], [&](const arach::v1::GenerateResponse& response) {
        timer.OnTokens(response.token_ids_size());
      });
      if (!s.ok()) out.error = absl::StrCat("grpc ", static_cast<int>(s.error_code()));
    } else {
      out.error = StreamHttpCompletion(o.http, info.model(), requests[i], timer, o.connect.api_key);
    }
    const StreamTiming t = timer.Finish();
    out.e2e = t.e2e_seconds;
    out.ttft = t.ttft_seconds;
    out.tpot = t.tpot_seconds;
    out.tokens = t.tokens;
  };

  const double rate = o.rate;
  const int concurrency = std::max(1, o.concurrency);
  const auto start = SteadyClock::now();
  std::vector<std::thread> threads;
  if (rate > 0) {  // open loop: Poisson arrivals
    std::exponential_distribution<double> gap(rate);
    for (int i = 0; i < num_requests; ++i) {
      threads.emplace_back(run_one, i);
      std::this_thread::sleep_for(std::chrono::duration<double>(gap(rng)));
    }
  } else {  // closed loop: `concurrency` clients
    RunClosedLoop(num_requests, concurrency, run_one);
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();

  nlohmann::json report = {{"server", o.connect.server},
                           {"api", o.http.empty() ? "grpc" : "http"},
                           {"http", o.http},
                           {"model", info.model()},
                           {"device", info.device()},
                           {"mode", rate > 0 ? "poisson" : "concurrency"},
                           {"rate", rate},
                           {"concurrency", rate > 0 ? 0 : concurrency},
                           {"prompt_len", o.prompt_len},
                           {"output_len", o.output_len},
                           {"duration_seconds", seconds},
                           {"overall", Summarise(outcomes, seconds)}};
  for (const WeightedVariant& entry : *mix) {
    std::vector<Outcome> subset;
    for (const Outcome& outcome : outcomes) {
      if (outcome.variant == entry.label) subset.push_back(outcome);
    }
    report["variants"][entry.label] = Summarise(subset, seconds);
  }
  if (o.json) {
    std::printf("%s\n", report.dump(2).c_str());
    return 0;
  }
  std::printf("# arach-cli bench: %s %s (%s, %s); %s, %d requests, prompt %s, output %s tokens, %.1f s\n",
              o.http.empty() ? "gRPC" : "HTTP", o.http.empty() ? o.connect.server.c_str() : o.http.c_str(), info.model().c_str(), info.device().c_str(),
              rate > 0 ? absl::StrFormat("Poisson %.2f req/s", rate).c_str() : absl::StrFormat("concurrency %d", concurrency).c_str(),
              num_requests, o.prompt_len.c_str(), o.output_len.c_str(), seconds);
  std::printf("%-11s %13s %8s %10s %9s %9s %9s %8s %8s %8s %9s %9s %s\n", "variant", "ok/requests", "req/s", "out tok/s",
              "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms", "E2E p50", "p99 s", "errors");
  PrintRow("all", report["overall"]);
  for (const WeightedVariant& entry : *mix) PrintRow(entry.label, report["variants"][entry.label]);
  return 0;
}

}  // namespace arach::client
