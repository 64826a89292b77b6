// A/B experiments end to end: the real server with --experiment assigns variants stably by key and as
// split, explicit variants win, every per-request metric carries the variant label; and arach-cli eval,
// run as a process against the server, reproduces the references (LAMBADA items and val_ppl).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <vector>

#include "client/arach_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/experiment.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_process.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using client::ArachClient;
using testing::ServerProcess;

constexpr char kSplit[] = "base=30,arach=70";

class ExperimentServer : public testing::SharedFixtureServer<ExperimentServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {std::string("--experiment=") + kSplit}; }

 protected:
  // Served variant and arm of a one-token request with `key` (and an optional explicit variant).
  std::pair<std::string, std::string> Served(const std::string& key, const arach::v1::VariantSpec* spec = nullptr) {
    arach::v1::GenerateRequest r;
    r.set_text("First Citizen:");
    r.set_max_tokens(1);
    r.set_experiment_key(key);
    if (spec != nullptr) *r.mutable_variant() = *spec;
    arach::v1::Finish finish;
    const grpc::Status s = client_->Generate(r, [&](const arach::v1::GenerateResponse& m) {
      if (m.has_finish()) finish = m.finish();
    });
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {finish.variant().name(), finish.variant().experiment_arm()};
  }
};

TEST_F(ExperimentServer, AssignmentIsStableFollowsTheSplitAndLabelsTheMetrics) {
  auto expected = server::ParseExperimentSplit(kSplit, -0.5f);
  ASSERT_TRUE(expected.ok());
  std::map<std::string, int> counts;
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "user-" + std::to_string(i);
    const auto [variant, arm] = Served(key);
    EXPECT_EQ(variant, expected->Assign(key, 0.0).variant.Name()) << key;
    EXPECT_EQ(arm, expected->Assign(key, 0.0).name);
    EXPECT_EQ(Served(key).first, variant) << "the same key must get the same variant";
    ++counts[variant];
  }
  EXPECT_EQ(counts["base"] + counts["arach"], kKeys);
  EXPECT_NEAR(counts["arach"], 0.7 * kKeys, 5 * std::sqrt(kKeys * 0.21)) << "share of arach off the configured split";

  auto m = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->Value("arach_experiment_assignments_total", "arm=\"arach\",variant=\"arach\""), 2 * counts["arach"]);
  EXPECT_EQ(m->Value("arach_experiment_assignments_total", "arm=\"base\",variant=\"base\""), 2 * counts["base"]);
  EXPECT_GE(m->Sum("arach_requests_total", {{"finish_reason", "length"}, {"variant", "arach"}}), 2 * counts["arach"]);
  EXPECT_EQ(m->Value("arach_generated_token_logprob_count", "variant=\"arach\""),
            m->Sum("arach_requests_total", {{"variant", "arach"}}))
      << "every finished request reports its generated-token log-prob";
  // Every per-request family labels every sample with its variant.
  for (const std::string family :
       {"arach_requests_total", "arach_time_to_first_token_seconds", "arach_time_per_output_token_seconds",
        "arach_e2e_request_latency_seconds", "arach_request_queue_time_seconds", "arach_prompt_tokens_total",
        "arach_generation_tokens_total", "arach_generated_token_logprob", "arach_prompt_perplexity",
        "arach_score_requests_total", "arach_experiment_assignments_total"}) {
    int samples = 0;
    for (const auto& [series, value] : m->samples) {
      bool belongs = false;
      for (const char* suffix : {"{", "_bucket{", "_sum{", "_count{"}) belongs |= series.rfind(family + suffix, 0) == 0;
      if (!belongs) continue;
      ++samples;
      EXPECT_THAT(series, ::testing::HasSubstr("variant=\"")) << series;
    }
    EXPECT_GT(samples, 0) << family;
  }
}

TEST_F(ExperimentServer, ExplicitVariantsWin) {
  arach::v1::VariantSpec base;
  base.set_arach(false);
  base.set_skip(false);
  arach::v1::VariantSpec skip;
  skip.set_skip(true);
  for (int i = 0; i < 20; ++i) {
    const std::string key = "explicit-" + std::to_string(i);
    EXPECT_EQ(Served(key, &base), (std::pair<std::string, std::string>{"base", ""}));
    EXPECT_EQ(Served(key, &skip), (std::pair<std::string, std::string>{"skip", ""}))
        << "a request that sets a variant field is not assigned; unset fields take the server default (base)";
  }
}

// Every metric the Grafana dashboard, the alert and recording rules, the HPA (with its prometheus-adapter rule)
// and the endpoint picker of the inference-gateway overlay use exists in the server's /metrics.
TEST_F(ExperimentServer, DashboardAlertsAndAutoscalerUseOnlyExportedMetrics) {
  std::ifstream in(std::string(testing::SourceDir()) + "/deploy/grafana/dashboards/arach-ab.json");
  ASSERT_TRUE(in) << "dashboard missing";
  const nlohmann::json dashboard = nlohmann::json::parse(in);
  std::vector<std::string> exprs;
  std::function<void(const nlohmann::json&)> collect = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if ((k == "expr" || k == "query") && v.is_string()) exprs.push_back(v.get<std::string>());
        collect(v);
      }
    } else if (j.is_array()) {
      for (const auto& v : j) collect(v);
    }
  };
  collect(dashboard);
  ASSERT_GT(exprs.size(), 10u);
  for (const char* file : {"/deploy/prometheus/alerts.yml", "/deploy/prometheus/recording-rules.yml", "/deploy/k8s/base/hpa.yaml",
                           "/deploy/k8s/base/prometheus-adapter-rules.yaml", "/deploy/k8s/overlays/inference-gateway/endpoint-picker.yaml"}) {
    std::ifstream text(std::string(testing::SourceDir()) + file);
    ASSERT_TRUE(text) << file;
    exprs.emplace_back(std::istreambuf_iterator<char>(text), std::istreambuf_iterator<char>());
  }
  auto m = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::regex name("arach_[a-z0-9_]+");
  // Recorded series (level:metric:operations, deploy/prometheus/recording-rules.yml) are names of our rules,
  // not of exported metrics; the rules' expressions, read above, are what must use exported ones.
  const std::regex recorded("[a-z_]+:[a-z0-9_]+:[a-z0-9_]+");
  int checked = 0;
  for (std::string expr : exprs) {
    expr = std::regex_replace(expr, recorded, "");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) {
      std::string metric = it->str();
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s(suffix);
        if (metric.size() > s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0 &&
            m->types.count(metric.substr(0, metric.size() - s.size()))) {
          metric = metric.substr(0, metric.size() - s.size());
        }
      }
      // Exported only where --lora_modules loaded adapters (lora_e2e_test scrapes it there).
      if (metric == "arach_lora_requests_info") continue;
      EXPECT_EQ(m->types.count(metric), 1u) << metric << " (in " << expr << ") is not exported";
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

// Runs arach-cli eval against the server and returns its JSON report.
nlohmann::json RunEval(const ServerProcess& server, const std::string& args) {
  testing::ScopedTempDir dir;
  const std::string out = dir.File("report.json");
  const std::string command = std::string(testing::CliBinary()) + " eval --server=" + server.grpc_address() + " " + args +
                              " --latency_requests=2 --bootstrap=200 --json_out=" + out + " > " + dir.File("stdout.txt") + " 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream report(out);
  EXPECT_EQ(rc, 0) << command;
  if (rc != 0 || !report) return nlohmann::json();
  return nlohmann::json::parse(report);
}

TEST_F(ExperimentServer, EvalReproducesTheReferences) {
  const nlohmann::json& refs = testing::RefsJson();
  const auto& val = refs["models"]["gpt2-tiny"]["variants"];
  const std::string text = " --text=" + testing::FixturePath("data/tinyshakespeare.txt") + " --window=128 --max_windows=8 --val_fraction=0.9";
  // base vs arach, with LAMBADA (first 40 lines, lm-eval protocol).
  const nlohmann::json r = RunEval(*server_, "--a=base --b=arach --lambada=" + testing::FixturePath("data/lambada_test.jsonl") +
                                                 " --lambada_limit=40 --items" + text);
  ASSERT_TRUE(r.contains("lambada")) << r.dump();
  const auto& lambada = refs["lambada_gpt2_tiny_first40"];
  ASSERT_EQ(r["lambada"]["per_item"].size(), lambada.size());
  for (size_t i = 0; i < lambada.size(); ++i) {
    const auto& got = r["lambada"]["per_item"][i];
    EXPECT_NEAR(got["logprob_a"].get<double>(), lambada[i]["base"]["logprob"].get<double>(), 1e-3) << i;
    EXPECT_NEAR(got["logprob_b"].get<double>(), lambada[i]["arach"]["logprob"].get<double>(), 1e-3) << i;
    EXPECT_EQ(got["greedy_a"].get<bool>(), lambada[i]["base"]["greedy"].get<bool>()) << i;
    EXPECT_EQ(got["greedy_b"].get<bool>(), lambada[i]["arach"]["greedy"].get<bool>()) << i;
  }
  auto near = [](double got, double want) { return std::fabs(got - want) <= 1e-3 * want; };
  EXPECT_TRUE(near(r["text"]["a"]["perplexity"], val["base"]["val_ppl"])) << r["text"].dump();
  EXPECT_TRUE(near(r["text"]["b"]["perplexity"], val["arach"]["val_ppl"])) << r["text"].dump();
  EXPECT_TRUE(r["text"]["sentences"][0].get<std::string>().find("significant") != std::string::npos);
  // The other variants' val_ppl.
  const nlohmann::json skip = RunEval(*server_, "--a=skip --b=arach+skip" + text);
  EXPECT_TRUE(near(skip["text"]["a"]["perplexity"], val["skip"]["val_ppl"])) << skip.dump();
  EXPECT_TRUE(near(skip["text"]["b"]["perplexity"], val["arach_skip"]["val_ppl"])) << skip.dump();
  const nlohmann::json b0 = RunEval(*server_, "--a=base --b=arach@0" + text);
  EXPECT_TRUE(near(b0["text"]["b"]["perplexity"], val["arach_b0"]["val_ppl"])) << b0.dump();
}

}  // namespace
}  // namespace arach
