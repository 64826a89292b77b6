// Paired shadow scoring end to end on the gpt2-tiny fixture with --shadow_rate=1: a greedy arach generation
// is scored again under base in the background, and the recorded log-prob delta and top-1 agreement equal
// what Score says about the same text under both variants; HTTP generations are shadowed too; arach-cli ab
// --paired reports, per request, what the server's shadow scores record.
#include <httplib.h>

#include <cstdlib>
#include <fstream>

#include "client/arach_client.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using client::ArachClient;
using testing::EventuallyMetrics;
using testing::ServerProcess;

constexpr char kArachVsBase[] = "against=\"base\",variant=\"arach\"";

class ShadowServer : public testing::SharedFixtureServer<ShadowServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--shadow_rate=1", "--shadow_variant=base"}; }

 protected:
  // Scores `ids` under ARACH (or base).
  arach::v1::ScoreResult Score(const std::vector<int32_t>& ids, bool arach) {
    arach::v1::ScoreRequest request;
    arach::v1::TokenIds* input = request.add_inputs()->mutable_token_ids();
    for (int32_t id : ids) input->add_ids(id);
    request.mutable_variant()->set_arach(arach);
    arach::v1::ScoreResponse response;
    const grpc::Status status = client_->Score(request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return status.ok() ? response.results(0) : arach::v1::ScoreResult{};
  }
};

// Whether `n` more shadow scores than in `before` are in `m`, in both of their histograms: the server observes the
// log-prob delta and then the top-1 agreement, so a scrape between the two sees only the first.
bool ShadowScoresRecorded(const testing::PrometheusText& m, const testing::PrometheusText& before, int n) {
  for (const char* count : {"arach_shadow_logprob_delta_count", "arach_shadow_top1_agreement_count"}) {
    if (m.Value(count, kArachVsBase) - before.Value(count, kArachVsBase) != n) return false;
  }
  return true;
}

TEST_F(ShadowServer, TheRecordedDeltaIsTheScoreDifferenceOnTheSameText) {
  const testing::PrometheusText before = testing::MetricsOrFail(*server_);
  std::vector<int32_t> ids = testing::RefPrompt("gpt2-tiny", "p48");
  const size_t prompt_len = ids.size();
  arach::v1::GenerateRequest generate;
  for (int32_t id : ids) generate.mutable_token_ids()->add_ids(id);
  generate.set_max_tokens(12);
  generate.mutable_sampling()->set_temperature(0.0f);
  generate.set_ignore_eos(true);
  generate.mutable_variant()->set_arach(true);
  const grpc::Status status = client_->Generate(generate, [&](const arach::v1::GenerateResponse& m) {
    for (int32_t id : m.token_ids()) ids.push_back(id);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(ids.size(), prompt_len + 12);

  testing::PrometheusText after;
  ASSERT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    after = m;
    return ShadowScoresRecorded(m, before, 1);
  })) << "the shadow score of the generation was not recorded";
  const double recorded_delta =
      after.Value("arach_shadow_logprob_delta_sum", kArachVsBase) - before.Value("arach_shadow_logprob_delta_sum", kArachVsBase);
  const double recorded_agreement =
      after.Value("arach_shadow_top1_agreement_sum", kArachVsBase) - before.Value("arach_shadow_top1_agreement_sum", kArachVsBase);

  // The same text scored under both variants: log-probs of the completion tokens (positions prompt_len..).
  const arach::v1::ScoreResult served = Score(ids, /*arach=*/true), against = Score(ids, /*arach=*/false);
  ASSERT_EQ(served.logprobs_size(), static_cast<int>(ids.size()) - 1);
  double delta = 0.0, agreement = 0.0;
  for (size_t t = prompt_len; t < ids.size(); ++t) {
    delta += served.logprobs(static_cast<int>(t - 1)) - against.logprobs(static_cast<int>(t - 1));
    // Greedy under arach: its argmax is the token itself, so the two agree where base's argmax is the token too.
    EXPECT_TRUE(served.is_greedy(static_cast<int>(t - 1))) << t;
    agreement += against.is_greedy(static_cast<int>(t - 1)) ? 1.0 : 0.0;
  }
  delta /= 12.0;
  agreement /= 12.0;
  EXPECT_NEAR(recorded_delta, delta, 1e-4);
  EXPECT_NEAR(recorded_agreement, agreement, 1e-9);
  EXPECT_EQ(after.Sum("arach_shadow_dropped_total"), before.Sum("arach_shadow_dropped_total"));
}

TEST_F(ShadowServer, HttpGenerationsAreShadowedToo) {
  const testing::PrometheusText before = testing::MetricsOrFail(*server_);
  httplib::Client http("http://" + server_->http_address());
  http.set_read_timeout(120, 0);
  const std::string body = R"({"model": "gpt2-tiny:arach", "prompt": "First Citizen:", "max_tokens": 4, "n": 2})";
  httplib::Result answer = http.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  EXPECT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return m.Value("arach_shadow_logprob_delta_count", kArachVsBase) - before.Value("arach_shadow_logprob_delta_count", kArachVsBase) == 2;
  })) << "one shadow score per choice";
}

TEST_F(ShadowServer, AbPairedAgreesWithTheServersShadowScores) {
  const testing::PrometheusText before = testing::MetricsOrFail(*server_);
  testing::ScopedTempDir dir;
  {
    std::ofstream prompts(dir.File("prompts.txt"));
    prompts << "\"First Citizen:\"\nROMEO:\n\"Before we proceed any further\"\nKING RICHARD III:\n";
  }
  const std::string command = std::string(testing::CliBinary()) + " ab --server=" + server_->grpc_address() + " --prompts=" +
                              dir.File("prompts.txt") + " --split=base=1,arach=1 --num_requests=12 --concurrency=3 --max_tokens=6" +
                              " --bootstrap=200 --paired --json_out=" + dir.File("ab.json") + " > " + dir.File("out.txt") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream file(dir.File("ab.json"));
  const nlohmann::json report = nlohmann::json::parse(file);
  ASSERT_TRUE(report.contains("paired")) << report.dump();
  const nlohmann::json& paired = report["paired"];
  EXPECT_EQ(paired["a"], "base");
  EXPECT_EQ(paired["b"], "arach");
  EXPECT_EQ(paired["mean_logprob_difference"]["requests"], 12);
  const double agreement = paired["top1_agreement"]["mean"].get<double>();
  EXPECT_GE(agreement, 0.0);
  EXPECT_LE(agreement, 1.0);
  // The answers arach served were shadowed against base by the server: the same per-request values.
  ASSERT_TRUE(paired["by_served_variant"].contains("arach")) << paired.dump();
  const nlohmann::json& arach_served = paired["by_served_variant"]["arach"];
  const int n = arach_served["mean_logprob_difference"]["requests"].get<int>();
  testing::PrometheusText after;
  ASSERT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    after = m;
    return ShadowScoresRecorded(m, before, n);
  }));
  const double server_delta =
      (after.Value("arach_shadow_logprob_delta_sum", kArachVsBase) - before.Value("arach_shadow_logprob_delta_sum", kArachVsBase)) / n;
  const double server_agreement =
      (after.Value("arach_shadow_top1_agreement_sum", kArachVsBase) - before.Value("arach_shadow_top1_agreement_sum", kArachVsBase)) / n;
  // ab reports b - a = arach - base; the server records served - against = arach - base.
  EXPECT_NEAR(arach_served["mean_logprob_difference"]["mean"].get<double>(), server_delta, 1e-4);
  EXPECT_NEAR(arach_served["top1_agreement"]["mean"].get<double>(), server_agreement, 1e-9);
}

}  // namespace
}  // namespace arach
