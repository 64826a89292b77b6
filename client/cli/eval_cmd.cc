// arach-cli eval: runs an evaluation set through a server under two variants (--a, --b) and reports each
// metric for both, their difference, a paired 95% confidence interval (bootstrap; McNemar's exact test for
// LAMBADA accuracy) and a sentence saying whether the difference is significant.
//   LAMBADA (--lambada FILE.jsonl [--lambada_limit N]): lm-eval-harness lambada_openai protocol: context =
//     text up to the last space, target = " " + last word; accuracy = every target token greedy;
//     perplexity = exp(-mean over items of the target log-likelihood).
//   Text perplexity (--text FILE --window W [--max_windows K] [--val_fraction F]): windows of W + 1 tokens
//     scored on their last W tokens (the protocol of the fixtures' val_ppl).
//   Latency (--latency_requests N): greedy generations of --latency_max_tokens tokens, one at a time.
#include <cmath>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/eval_tasks.h"
#include "client/cli/report_file.h"
#include "client/cli/stats.h"
#include "client/cli/variant_arg.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

std::string Verdict(bool significant) { return significant ? "significant at the 5% level" : "not significant at the 5% level"; }

json CompareLambada(const std::vector<LambadaScore>& a, const std::vector<LambadaScore>& b, const std::string& name_a,
                    const std::string& name_b, int resamples, uint64_t seed, bool items) {
  const int n = static_cast<int>(a.size());
  auto accuracy = [&](const std::vector<LambadaScore>& s, const std::vector<int>& idx) {
    double hits = 0;
    for (int i : idx) hits += s[i].greedy;
    return hits / idx.size();
  };
  auto perplexity = [&](const std::vector<LambadaScore>& s, const std::vector<int>& idx) {
    double ll = 0;
    for (int i : idx) ll += s[i].logprob;
    return std::exp(-ll / idx.size());
  };
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  int b_only = 0, a_only = 0;
  for (int i = 0; i < n; ++i) {
    b_only += !a[i].greedy && b[i].greedy;
    a_only += a[i].greedy && !b[i].greedy;
  }
  const double acc_a = accuracy(a, all), acc_b = accuracy(b, all);
  const double ppl_a = perplexity(a, all), ppl_b = perplexity(b, all);
  const Interval acc_ci = Bootstrap(n, [&](const std::vector<int>& idx) { return accuracy(b, idx) - accuracy(a, idx); }, resamples, seed);
  const Interval ppl_ci = Bootstrap(n, [&](const std::vector<int>& idx) { return perplexity(b, idx) - perplexity(a, idx); }, resamples, seed + 1);
  const double p = McNemarExactP(b_only, a_only);
  json out = {{"items", n},
              {"a", {{"accuracy", acc_a}, {"perplexity", ppl_a}}},
              {"b", {{"accuracy", acc_b}, {"perplexity", ppl_b}}},
              {"accuracy_difference", acc_b - acc_a},
              {"accuracy_ci95", {acc_ci.low, acc_ci.high}},
              {"mcnemar", {{"b_right_a_wrong", b_only}, {"a_right_b_wrong", a_only}, {"p", p}}},
              {"accuracy_significant", p < 0.05},
              {"perplexity_difference", ppl_b - ppl_a},
              {"perplexity_ci95", {ppl_ci.low, ppl_ci.high}},
              {"perplexity_significant", !ppl_ci.Contains(0.0)}};
  out["sentences"] = {
      absl::StrFormat("LAMBADA accuracy (%d items): %s %.1f%% vs %s %.1f%%, difference %+.1f points (95%% CI %+.1f to %+.1f; "
                      "McNemar exact p = %.3g): %s.",
                      n, name_b, 100 * acc_b, name_a, 100 * acc_a, 100 * (acc_b - acc_a), 100 * acc_ci.low, 100 * acc_ci.high, p,
                      Verdict(p < 0.05)),
      absl::StrFormat("LAMBADA perplexity: %s %.3f vs %s %.3f, difference %+.3f (95%% CI %+.3f to %+.3f): %s.", name_b, ppl_b,
                      name_a, ppl_a, ppl_b - ppl_a, ppl_ci.low, ppl_ci.high, Verdict(!ppl_ci.Contains(0.0)))};
  if (items) {
    for (int i = 0; i < n; ++i) {
      out["per_item"].push_back({{"logprob_a", a[i].logprob}, {"greedy_a", a[i].greedy}, {"logprob_b", b[i].logprob},
                                 {"greedy_b", b[i].greedy}});
    }
  }
  return out;
}

json CompareText(const std::vector<WindowScore>& a, const std::vector<WindowScore>& b, const std::string& name_a,
                 const std::string& name_b, int resamples, uint64_t seed) {
  const int n = static_cast<int>(a.size());
  auto ppl = [](const std::vector<WindowScore>& s, const std::vector<int>& idx) {
    double nll = 0, tokens = 0;
    for (int i : idx) {
      nll += s[i].nll;
      tokens += s[i].tokens;
    }
    return std::exp(nll / tokens);
  };
  std::vector<int> all(n);
  int tokens = 0;
  for (int i = 0; i < n; ++i) {
    all[i] = i;
    tokens += a[i].tokens;
  }
  const double pa = ppl(a, all), pb = ppl(b, all);
  const Interval ci = Bootstrap(n, [&](const std::vector<int>& idx) { return ppl(b, idx) - ppl(a, idx); }, resamples, seed);
  json out = {{"windows", n}, {"tokens", tokens}, {"a", {{"perplexity", pa}}}, {"b", {{"perplexity", pb}}},
              {"difference", pb - pa}, {"ci95", {ci.low, ci.high}}, {"significant", !ci.Contains(0.0)}};
  out["sentences"] = {absl::StrFormat("Text perplexity (%d windows, %d tokens): %s %.3f vs %s %.3f, difference %+.3f "
                                      "(95%% CI %+.3f to %+.3f, paired bootstrap over windows): %s.",
                                      n, tokens, name_b, pb, name_a, pa, pb - pa, ci.low, ci.high, Verdict(!ci.Contains(0.0)))};
  return out;
}

json CompareLatency(const std::vector<LatencySample>& a, const std::vector<LatencySample>& b, const std::string& name_a,
                    const std::string& name_b, int resamples, uint64_t seed) {
  json out = {{"requests", a.size()}};
  std::vector<std::string> sentences;
  for (const auto& [key, get] : std::vector<std::pair<std::string, double LatencySample::*>>{
           {"ttft_ms", &LatencySample::ttft}, {"tpot_ms", &LatencySample::tpot}, {"e2e_ms", &LatencySample::e2e}}) {
    std::vector<double> va, vb, diff;
    for (size_t i = 0; i < a.size(); ++i) {
      va.push_back(1e3 * a[i].*get);
      vb.push_back(1e3 * b[i].*get);
      diff.push_back(vb.back() - va.back());
    }
    const Interval ci = BootstrapMean(diff, resamples, seed);
    out[key] = {{"a", Mean(va)}, {"b", Mean(vb)}, {"difference", Mean(diff)}, {"ci95", {ci.low, ci.high}},
                {"significant", !ci.Contains(0.0)}};
    sentences.push_back(absl::StrFormat("Mean %s: %s %.2f vs %s %.2f, difference %+.2f (95%% CI %+.2f to %+.2f, paired): %s.",
                                        key, name_b, Mean(vb), name_a, Mean(va), Mean(diff), ci.low, ci.high,
                                        Verdict(!ci.Contains(0.0))));
  }
  out["sentences"] = sentences;
  return out;
}

void PrintSentences(const json& section) {
  for (const auto& s : section["sentences"]) std::printf("  %s\n", s.get<std::string>().c_str());
}

}  // namespace

int RunEval(const EvalOptions& o) {
  const std::string& name_a = o.a;
  const std::string& name_b = o.b;
  absl::StatusOr<arach::v1::VariantSpec> spec_a = ParseVariantSpec(name_a);
  absl::StatusOr<arach::v1::VariantSpec> spec_b = ParseVariantSpec(name_b);
  if (!spec_a.ok()) return ReportError("eval", absl::InvalidArgumentError(absl::StrCat("--a: ", spec_a.status().message())));
  if (!spec_b.ok()) return ReportError("eval", absl::InvalidArgumentError(absl::StrCat("--b: ", spec_b.status().message())));
  absl::StatusOr<std::unique_ptr<ArachClient>> connected = Connect(o.connect);
  if (!connected.ok()) return ReportError("eval", connected.status());
  ArachClient& client = **connected;
  arach::v1::ModelInfo info;
  if (const grpc::Status s = client.GetModelInfo(&info); !s.ok()) return ReportRpcFailure("eval", s);
  const int resamples = o.bootstrap;
  const uint64_t seed = o.bootstrap_seed;
  json report = {{"server", o.connect.server}, {"model", info.model()}, {"a", name_a}, {"b", name_b},
                 {"bootstrap_resamples", resamples}};
  auto fail = [](const absl::Status& s) { return ReportError("eval", s); };
  std::vector<std::vector<int32_t>> latency_prompts;
  if (!o.lambada.empty()) {
    auto items = LoadLambada(client, o.lambada, o.lambada_limit);
    if (!items.ok()) return fail(items.status());
    auto a = ScoreLambada(client, *items, *spec_a);
    if (!a.ok()) return fail(a.status());
    auto b = ScoreLambada(client, *items, *spec_b);
    if (!b.ok()) return fail(b.status());
    report["lambada"] = CompareLambada(*a, *b, name_a, name_b, resamples, seed, o.items);
    report["lambada"]["file"] = o.lambada;
    for (const LambadaItem& item : *items) latency_prompts.push_back(item.context);
  }
  if (!o.text.empty()) {
    auto windows = TextWindows(client, o.text, o.window, o.max_windows, o.val_fraction);
    if (!windows.ok()) return fail(windows.status());
    auto a = ScoreWindows(client, *windows, *spec_a);
    if (!a.ok()) return fail(a.status());
    auto b = ScoreWindows(client, *windows, *spec_b);
    if (!b.ok()) return fail(b.status());
    report["text"] = CompareText(*a, *b, name_a, name_b, resamples, seed);
    report["text"]["file"] = o.text;
    if (latency_prompts.empty()) {
      for (const auto& w : *windows) latency_prompts.emplace_back(w.begin(), w.begin() + std::min<size_t>(w.size(), 64));
    }
  }
  if (o.latency_requests > 0 && !latency_prompts.empty()) {
    // Each prompt leaves room for the generated tokens (signed: max_tokens may exceed the context).
    const int64_t room = static_cast<int64_t>(info.context_length()) - o.latency_max_tokens - 1;
    if (room < 1) {
      return fail(absl::InvalidArgumentError(absl::StrCat("--latency_max_tokens ", o.latency_max_tokens,
                                                          " leaves no room for a prompt in the model's context of ",
                                                          info.context_length())));
    }
    latency_prompts.resize(std::min<size_t>(latency_prompts.size(), o.latency_requests));
    for (auto& p : latency_prompts) p.resize(std::min<size_t>(p.size(), static_cast<size_t>(room)));
    auto a = MeasureLatency(client, latency_prompts, *spec_a, o.latency_max_tokens);
    if (!a.ok()) return fail(a.status());
    auto b = MeasureLatency(client, latency_prompts, *spec_b, o.latency_max_tokens);
    if (!b.ok()) return fail(b.status());
    report["latency"] = CompareLatency(*a, *b, name_a, name_b, resamples, seed);
  }
  std::printf("arach-cli eval: %s vs %s on %s (%s)\n", name_b.c_str(), name_a.c_str(), info.model().c_str(), o.connect.server.c_str());
  for (const char* section : {"lambada", "text", "latency"}) {
    if (report.contains(section)) PrintSentences(report[section]);
  }
  if (!o.json_out.empty()) {
    if (absl::Status s = WriteReport(o.json_out, report); !s.ok()) return fail(s);
    std::printf("report written to %s\n", o.json_out.c_str());
  }
  return 0;
}

}  // namespace arach::client
