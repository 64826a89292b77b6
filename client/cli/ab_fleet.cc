#include "client/cli/ab_fleet.h"

#include <httplib.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arach::client {
namespace {

using json = nlohmann::json;

// One instant query: the result vector's samples, each as its labels and value.
struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

absl::StatusOr<std::vector<Sample>> Query(httplib::Client& client, const std::string& url, const std::string& promql) {
  const httplib::Result result = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!result) return absl::UnavailableError(absl::StrCat("--prometheus ", url, ": no answer (", httplib::to_string(result.error()), ")"));
  const json body = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (result->status != 200 || body.is_discarded() || body.value("status", "") != "success") {
    return absl::FailedPreconditionError(absl::StrCat("--prometheus ", url, ": query ", promql, " failed (HTTP ", result->status, "): ",
                                                      body.is_discarded() ? result->body.substr(0, 200) : body.value("error", "")));
  }
  std::vector<Sample> samples;
  for (const json& item : body["data"]["result"]) {
    Sample sample;
    for (const auto& [key, value] : item["metric"].items()) sample.labels[key] = value.get<std::string>();
    double value = NAN;
    if (!absl::SimpleAtod(item["value"][1].get<std::string>(), &value)) continue;
    sample.value = value;
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::string Label(const Sample& s, const std::string& key) {
  auto it = s.labels.find(key);
  return it == s.labels.end() ? "" : it->second;
}

// A cell: the value times `scale` with `decimals`, or "-" where the series had no sample (nothing observed in
// the window).
std::string Cell(const json& entry, const std::string& key, int decimals, double scale = 1, bool sign = false) {
  if (!entry.contains(key) || !entry[key].is_number()) return "-";
  const double value = scale * entry[key].get<double>();
  // (two calls: absl::StrFormat checks a constant format at compile time, which clang insists on)
  return sign ? absl::StrFormat("%+.*f", decimals, value) : absl::StrFormat("%.*f", decimals, value);
}

}  // namespace

absl::StatusOr<json> ReportFleetAb(const AbOptions& options) {
  const std::string url = options.prometheus;
  httplib::Client client(url);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  // Per variant: the recorded series and the report key each fills.
  struct PerVariant {
    const char* key;
    const char* series;
  };
  const PerVariant per_variant[] = {
      {"share", "variant:arach_requests:share_rate5m"},
      {"ttft_p50_s", "variant:arach_time_to_first_token_seconds:quantile_rate5m{quantile=\"0.5\"}"},
      {"ttft_p99_s", "variant:arach_time_to_first_token_seconds:quantile_rate5m{quantile=\"0.99\"}"},
      {"tpot_p50_s", "variant:arach_time_per_output_token_seconds:quantile_rate5m{quantile=\"0.5\"}"},
      {"tpot_p99_s", "variant:arach_time_per_output_token_seconds:quantile_rate5m{quantile=\"0.99\"}"},
      {"e2e_p50_s", "variant:arach_e2e_request_latency_seconds:quantile_rate5m{quantile=\"0.5\"}"},
      {"output_tokens_per_second", "variant:arach_generation_tokens:rate5m"},
      {"mean_generated_logprob", "variant:arach_generated_token_logprob:mean_rate5m"},
      {"attention_sink_mass", "variant:arach_attention_sink_mass:mean_rate5m"},
  };
  json report = {{"prometheus", url}, {"window", "5m"}, {"variants", json::object()}, {"shadow", json::object()}};
  json& variants = report["variants"];
  for (const PerVariant& q : per_variant) {
    absl::StatusOr<std::vector<Sample>> samples = Query(client, url, q.series);
    if (!samples.ok()) return samples.status();
    for (const Sample& s : *samples) {
      if (!std::isfinite(s.value)) continue;
      variants[Label(s, "variant")][q.key] = s.value;
    }
  }
  absl::StatusOr<std::vector<Sample>> rates = Query(client, url, "sum by (variant) (variant_finish_reason:arach_requests:rate5m)");
  if (!rates.ok()) return rates.status();
  for (const Sample& s : *rates) variants[Label(s, "variant")]["requests_per_second"] = s.value;
  for (const auto& [key, series] : {std::pair<const char*, const char*>{"mean_logprob_difference", "variant_against:arach_shadow_logprob_delta:mean_rate5m"},
                                    {"top1_agreement", "variant_against:arach_shadow_top1_agreement:mean_rate5m"}}) {
    absl::StatusOr<std::vector<Sample>> samples = Query(client, url, series);
    if (!samples.ok()) return samples.status();
    for (const Sample& s : *samples) {
      if (std::isfinite(s.value)) report["shadow"][absl::StrCat(Label(s, "variant"), " vs ", Label(s, "against"))][key] = s.value;
    }
  }
  // Variants declared on the replicas but not served in the window (a zero rate) are left out.
  for (auto it = variants.begin(); it != variants.end();) {
    it = it->value("requests_per_second", 0.0) > 0 ? std::next(it) : variants.erase(it);
  }
  if (variants.empty()) {
    return absl::NotFoundError(absl::StrCat("--prometheus ", url, ": no arach requests in the last 5 minutes (are the recording rules of "
                                            "deploy/prometheus/recording-rules.yml loaded, and the replicas scraped?)"));
  }

  std::printf("# arach-cli ab: the fleet as %s sees it (every scraped replica; last 5 min)\n", url.c_str());
  std::printf("%-11s %7s %6s %9s %9s %9s %9s %9s %10s %10s %9s\n", "variant", "req/s", "share", "TTFT p50", "TTFT p99", "TPOT p50",
              "TPOT p99", "E2E p50", "out tok/s", "gen lp", "sink");
  std::printf("%-11s %7s %6s %9s %9s %9s %9s %9s %10s %10s %9s\n", "", "", "", "ms", "ms", "ms", "ms", "ms", "", "", "");
  for (const auto& [variant, e] : variants.items()) {
    std::printf("%-11s %7s %5s%% %9s %9s %9s %9s %9s %10s %10s %9s\n", variant.c_str(), Cell(e, "requests_per_second", 2).c_str(),
                Cell(e, "share", 0, 100).c_str(), Cell(e, "ttft_p50_s", 1, 1e3).c_str(), Cell(e, "ttft_p99_s", 1, 1e3).c_str(),
                Cell(e, "tpot_p50_s", 1, 1e3).c_str(), Cell(e, "tpot_p99_s", 1, 1e3).c_str(), Cell(e, "e2e_p50_s", 1, 1e3).c_str(),
                Cell(e, "output_tokens_per_second", 1).c_str(), Cell(e, "mean_generated_logprob", 3).c_str(),
                Cell(e, "attention_sink_mass", 3).c_str());
  }
  for (const auto& [pair, e] : report["shadow"].items()) {
    std::printf("  paired shadow %s: mean log-prob difference per token %s, top-1 agreement %s\n", pair.c_str(),
                Cell(e, "mean_logprob_difference", 4, 1, /*sign=*/true).c_str(), Cell(e, "top1_agreement", 3).c_str());
  }
  return report;
}

}  // namespace arach::client
