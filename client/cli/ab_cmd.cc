// arach-cli ab: replays a prompt set against a running server with a variant split and prints, per
// variant, TTFT / TPOT / end-to-end latency, output tokens/s and the mean log-prob of generated tokens,
// each mean with a 95% bootstrap interval, and the difference of every variant from the first one.
// With --split the client assigns variants (weights, seeded); without it the requests carry experiment
// keys and the server's experiment assigns (the served variant is read from each response).
// With --paired, each answer is also scored under the first two variants (ab_paired.h). With --prometheus URL it
// replays nothing and reports the whole fleet's A/B from Prometheus instead (ab_fleet.h).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/arach_client.h"
#include "client/cli/ab_fleet.h"
#include "client/cli/ab_paired.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/load_loop.h"
#include "client/cli/report_file.h"
#include "client/cli/stats.h"
#include "client/cli/stream_timing.h"
#include "client/cli/variant_arg.h"
#include "engine/variant/variant_mix.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

struct AbOutcome {
  std::string variant;
  arach::v1::VariantSpec served;     // the variant's exact fields, as the server reported them
  std::vector<int32_t> completion;   // generated token ids
  bool ok = false;
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0, mean_logprob = 0;
  int tokens = 0;
};

std::vector<std::string> ReadPrompts(const std::string& path) {
  std::vector<std::string> prompts;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    prompts.push_back(!j.is_discarded() && j.is_string() ? j.get<std::string>() : line);
  }
  return prompts;
}

json Describe(const std::vector<double>& values, int resamples, uint64_t seed) {
  const Interval ci = BootstrapMean(values, resamples, seed);
  return {{"mean", Mean(values)}, {"ci95", {ci.low, ci.high}}, {"p50", Percentile(values, 0.5)}, {"p90", Percentile(values, 0.9)}};
}

// The difference of means (b - a) with a bootstrap interval resampling both groups independently.
json Difference(const std::vector<double>& a, const std::vector<double>& b, int resamples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> diffs;
  for (int r = 0; r < resamples && !a.empty() && !b.empty(); ++r) {
    double sa = 0, sb = 0;
    for (size_t i = 0; i < a.size(); ++i) sa += a[rng() % a.size()];
    for (size_t i = 0; i < b.size(); ++i) sb += b[rng() % b.size()];
    diffs.push_back(sb / b.size() - sa / a.size());
  }
  const double low = Percentile(diffs, 0.025), high = Percentile(diffs, 0.975);
  return {{"difference", Mean(b) - Mean(a)}, {"ci95", {low, high}}, {"significant", !(low <= 0 && 0 <= high)}};
}

}  // namespace

// --paired: scores every answered request under the first two variants of `order` and adds report["paired"].
absl::Status ReportPaired(ArachClient& client, const AbOptions& options, const std::vector<std::string>& prompts,
                          const std::vector<AbOutcome>& outcomes, const std::vector<std::string>& order, json& report) {
  std::vector<std::string> variants;
  for (const std::string& v : order) {
    if (v != "error") variants.push_back(v);
  }
  if (variants.size() < 2) return absl::FailedPreconditionError("--paired needs answers from two variants");
  arach::v1::TokenizeRequest tokenize;  // the prompts as Generate tokenized their text
  for (const std::string& p : prompts) tokenize.add_texts(p);
  tokenize.set_add_bos(true);
  arach::v1::TokenizeResponse tokens;
  grpc::ClientContext context;
  client.Authorize(&context);
  if (const grpc::Status s = client.inference().Tokenize(&context, tokenize, &tokens); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("tokenizing the prompts: ", s.error_message()));
  }
  PairedArm arms[2];
  std::vector<PairedRequest> requests;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const AbOutcome& o = outcomes[i];
    for (int k = 0; k < 2; ++k) {
      if (o.variant == variants[k] && arms[k].name.empty()) arms[k] = {o.variant, o.served};
    }
    if (!o.ok) continue;
    const arach::v1::TokenIds& prompt = tokens.tokens(static_cast<int>(i % prompts.size()));
    requests.push_back({std::vector<int32_t>(prompt.ids().begin(), prompt.ids().end()), o.completion, o.variant});
  }
  absl::StatusOr<json> paired = RunPaired(client, arms[0], arms[1], requests,
                                          PairedOptions{options.concurrency, options.bootstrap, options.bootstrap_seed});
  if (!paired.ok()) return paired.status();
  auto difference = [](const json& d) {
    return absl::StrFormat("%+.4f (95%% CI %+.4f to %+.4f)", d["mean"].get<double>(), d["ci95"][0].get<double>(),
                           d["ci95"][1].get<double>());
  };
  auto share = [](const json& d) {
    return absl::StrFormat("%.3f (95%% CI %.3f to %.3f)", d["mean"].get<double>(), d["ci95"][0].get<double>(),
                           d["ci95"][1].get<double>());
  };
  std::printf("paired (each answer scored under both, %zu requests): %s - %s mean log-prob per completion token %s; "
              "top-1 agreement %s\n",
              requests.size(), arms[1].name.c_str(), arms[0].name.c_str(),
              difference((*paired)["mean_logprob_difference"]).c_str(), share((*paired)["top1_agreement"]).c_str());
  for (const auto& [served, entry] : (*paired)["by_served_variant"].items()) {
    std::printf("  answers served by %s: difference %s, agreement %s\n", served.c_str(),
                difference(entry["mean_logprob_difference"]).c_str(), share(entry["top1_agreement"]).c_str());
  }
  report["paired"] = std::move(*paired);
  return absl::OkStatus();
}

int RunAb(const AbOptions& options) {
  if (!options.prometheus.empty()) {
    absl::StatusOr<json> report = ReportFleetAb(options);
    if (!report.ok()) return ReportError("ab", report.status());
    if (!options.json_out.empty()) {
      if (absl::Status s = WriteReport(options.json_out, *report); !s.ok()) return ReportError("ab", s);
    }
    return 0;
  }
  const std::vector<std::string> prompts = ReadPrompts(options.prompts);
  if (prompts.empty()) return ReportError("ab", absl::InvalidArgumentError("--prompts FILE with one prompt per line is required"));
  std::vector<WeightedVariant> split;
  if (!options.split.empty()) {
    absl::StatusOr<std::vector<WeightedVariant>> parsed = ParseVariantMix(options.split);
    if (!parsed.ok()) return ReportError("ab", absl::InvalidArgumentError(absl::StrCat("--split: ", parsed.status().message())));
    split = std::move(*parsed);
  }
  std::vector<double> weights;
  for (const WeightedVariant& entry : split) weights.push_back(entry.weight);
  const int count = options.num_requests > 0 ? options.num_requests : static_cast<int>(prompts.size());
  std::mt19937_64 rng(options.seed);
  std::vector<arach::v1::GenerateRequest> requests(count);
  for (int i = 0; i < count; ++i) {
    arach::v1::GenerateRequest& r = requests[i];
    r.set_text(prompts[i % prompts.size()]);
    r.set_max_tokens(options.max_tokens);
    r.set_logprobs(true);
    r.mutable_sampling()->set_temperature(static_cast<float>(options.temperature));
    if (split.empty()) {
      r.set_experiment_key(absl::StrFormat("ab-%d", i));
    } else {
      *r.mutable_variant() = ToVariantSpec(split[PickWeighted(weights, std::uniform_real_distribution<double>(0, 1)(rng))].choice);
    }
  }
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(options.connect);
  if (!client.ok()) return ReportError("ab", client.status());
  std::vector<AbOutcome> outcomes(count);
  const auto start = std::chrono::steady_clock::now();
  RunClosedLoop(count, options.concurrency, [&](int i) {
    AbOutcome& o = outcomes[i];
    StreamTimer timer;
    double logprob_sum = 0;
    const grpc::Status s = (*client)->Generate(requests[i], [&](const arach::v1::GenerateResponse& r) {
      timer.OnTokens(r.token_ids_size());
      for (const arach::v1::TokenLogprob& lp : r.logprobs()) logprob_sum += lp.logprob();
      o.completion.insert(o.completion.end(), r.token_ids().begin(), r.token_ids().end());
      if (r.has_finish()) {
        o.variant = r.finish().variant().name();
        o.served.set_arach(r.finish().variant().arach());
        o.served.set_arach_offset(r.finish().variant().arach_offset());
        o.served.set_skip(r.finish().variant().skip());
      }
    });
    const StreamTiming t = timer.Finish();
    o.tokens = t.tokens;
    o.ok = s.ok() && o.tokens > 0;
    if (!s.ok()) o.variant = "error";
    o.e2e_ms = 1e3 * t.e2e_seconds;
    o.ttft_ms = 1e3 * t.ttft_seconds;
    o.tpot_ms = 1e3 * t.tpot_seconds;
    o.mean_logprob = o.tokens > 0 ? logprob_sum / o.tokens : 0;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const int resamples = options.bootstrap;
  const uint64_t seed = options.bootstrap_seed;
  std::map<std::string, std::vector<const AbOutcome*>> by_variant;
  std::vector<std::string> order;
  for (const AbOutcome& o : outcomes) {
    if (!by_variant.count(o.variant)) order.push_back(o.variant);
    by_variant[o.variant].push_back(&o);
  }
  std::sort(order.begin(), order.end(), [](const std::string& x, const std::string& y) {
    return (x == "base") != (y == "base") ? x == "base" : x < y;  // base first when present
  });
  json report = {{"server", options.connect.server}, {"requests", count}, {"seconds", seconds},
                 {"assignment", split.empty() ? "server experiment" : "client split"}};
  std::map<std::string, std::map<std::string, std::vector<double>>> series;
  for (const std::string& v : order) {
    if (v == "error") {
      report["errors"] = by_variant[v].size();
      continue;
    }
    int tokens = 0;
    for (const AbOutcome* o : by_variant[v]) {
      series[v]["ttft_ms"].push_back(o->ttft_ms);
      series[v]["tpot_ms"].push_back(o->tpot_ms);
      series[v]["e2e_ms"].push_back(o->e2e_ms);
      series[v]["mean_generated_logprob"].push_back(o->mean_logprob);
      tokens += o->tokens;
    }
    json entry = {{"requests", by_variant[v].size()}, {"share", static_cast<double>(by_variant[v].size()) / count},
                  {"output_tokens_per_second", tokens / seconds}};
    for (const auto& [metric, values] : series[v]) entry[metric] = Describe(values, resamples, seed);
    report["variants"][v] = entry;
  }
  std::printf("# arach-cli ab: %s, %d requests (%s), %.1f s\n", options.connect.server.c_str(), count,
              split.empty() ? "server experiment assigns" : "client split", seconds);
  std::printf("%-11s %8s %6s %10s %26s %26s %26s %28s\n", "variant", "requests", "share", "out tok/s", "TTFT ms (95% CI)",
              "TPOT ms (95% CI)", "E2E ms (95% CI)", "mean gen log-prob (95% CI)");
  for (const std::string& v : order) {
    if (v == "error") continue;
    const json& e = report["variants"][v];
    auto cell = [&](const char* metric) {
      const json& d = e[metric];
      return absl::StrFormat("%.2f [%.2f, %.2f]", d["mean"].get<double>(), d["ci95"][0].get<double>(), d["ci95"][1].get<double>());
    };
    std::printf("%-11s %8d %5.0f%% %10.1f %26s %26s %26s %28s\n", v.c_str(), e["requests"].get<int>(), 100 * e["share"].get<double>(),
                e["output_tokens_per_second"].get<double>(), cell("ttft_ms").c_str(), cell("tpot_ms").c_str(),
                cell("e2e_ms").c_str(), cell("mean_generated_logprob").c_str());
  }
  const std::string reference = order.empty() ? "" : order.front();
  for (const std::string& v : order) {
    if (v == reference || v == "error" || reference == "error") continue;
    for (const char* metric : {"ttft_ms", "tpot_ms", "e2e_ms", "mean_generated_logprob"}) {
      const json d = Difference(series[reference][metric], series[v][metric], resamples, seed);
      report["differences"][v + " - " + reference][metric] = d;
      std::printf("  %s - %s %s: %+.3f (95%% CI %+.3f to %+.3f): %s\n", v.c_str(), reference.c_str(), metric,
                  d["difference"].get<double>(), d["ci95"][0].get<double>(), d["ci95"][1].get<double>(),
                  d["significant"].get<bool>() ? "significant" : "not significant");
    }
  }
  if (options.paired) {
    absl::Status s = ReportPaired(**client, options, prompts, outcomes, order, report);
    if (!s.ok()) return ReportError("ab", s);
  }
  if (!options.json_out.empty()) {
    if (absl::Status s = WriteReport(options.json_out, report); !s.ok()) return ReportError("ab", s);
  }
  return 0;
}

}  // namespace arach::client
