// Attention-sink diagnostics end to end, against the real server on the gpt2-tiny fixture with
// --diagnostics_sample_rate=1: gRPC Score with diagnostics and the HTTP completions extension return the
// references of refs/sink_refs.json; sampled requests feed arach_attention_sink_mass by variant without
// returning diagnostics nobody asked for; arach-cli diagnostics prints the same per-layer means and writes a chart.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "client/arach_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_process.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using client::ArachClient;
using json = nlohmann::json;
using testing::ServerProcess;

class DiagnosticsServer : public testing::SharedFixtureServer<DiagnosticsServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--diagnostics_sample_rate=1"}; }

 protected:
  static const json& Reference(const std::string& prompt) { return testing::SinkRefsJson()["models"]["gpt2-tiny"][prompt]; }
};

void ExpectTableNear(const json& got, const json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t l = 0; l < want.size(); ++l) {
    ASSERT_EQ(got[l].size(), want[l].size()) << what << " layer " << l;
    for (size_t h = 0; h < want[l].size(); ++h) {
      EXPECT_NEAR(got[l][h].get<double>(), want[l][h].get<double>(), 1e-4) << what << " layer " << l << " head " << h;
    }
  }
}

// One column of a gRPC AttentionDiagnostics as [layers][heads].
json Column(const arach::v1::AttentionDiagnostics& d, const google::protobuf::RepeatedField<float>& (arach::v1::LayerAttention::*field)() const) {
  json table = json::array();
  for (const arach::v1::LayerAttention& layer : d.layers()) table.push_back(std::vector<float>((layer.*field)().begin(), (layer.*field)().end()));
  return table;
}

TEST_F(DiagnosticsServer, GrpcScoreReturnsTheReferenceMasses) {
  for (const std::string prompt : {"p7", "p48"}) {
    for (const std::string variant : {"base", "arach"}) {
      arach::v1::ScoreRequest request;
      arach::v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
      for (const auto& id : Reference(prompt)["ids"]) ids->add_ids(id.get<int32_t>());
      request.mutable_variant()->set_arach(variant == "arach");
      request.mutable_variant()->set_arach_offset(-0.5f);
      request.set_diagnostics(true);
      arach::v1::ScoreResponse response;
      const grpc::Status status = client_->Score(request, &response);
      ASSERT_TRUE(status.ok()) << status.error_message();
      const arach::v1::AttentionDiagnostics& d = response.results(0).attention();
      const json& want = Reference(prompt)[variant];
      const std::string what = prompt + " " + variant;
      ExpectTableNear(Column(d, &arach::v1::LayerAttention::sink_mass), want["sink_mass"], what + " sink_mass");
      ExpectTableNear(Column(d, &arach::v1::LayerAttention::hub_mass), want["hub_mass"], what + " hub_mass");
      if (variant == "arach") {
        ExpectTableNear(Column(d, &arach::v1::LayerAttention::hub_rows_sink_mass), want["hub_rows_sink_mass"], what + " hub rows");
        ExpectTableNear(Column(d, &arach::v1::LayerAttention::hub_rows_hub_mass), want["hub_rows_hub_mass"], what + " hub rows");
      } else {
        EXPECT_TRUE(d.layers(0).hub_rows_sink_mass().empty()) << "hub rows exist only with ARACH";
      }
      double mean = 0;
      for (const auto& layer : want["sink_mass"]) {
        for (const auto& v : layer) mean += v.get<double>();
      }
      mean /= static_cast<double>(want["sink_mass"].size() * want["sink_mass"][0].size());
      EXPECT_NEAR(d.mean_sink_mass(), mean, 1e-4);
    }
  }
}

TEST_F(DiagnosticsServer, HttpCompletionsExtensionAndSampledMetrics) {
  auto scrape = [&](const std::string& variant) {
    auto text = testing::HttpGetMetrics(server_->metrics_address());
    EXPECT_TRUE(text.ok()) << text.status();
    auto parsed = testing::ParsePrometheusText(text.ok() ? *text : "");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? parsed->Value("arach_attention_sink_mass_count", "variant=\"" + variant + "\"") : -1.0;
  };
  const double before = scrape("arach");
  httplib::Client http("http://" + server_->http_address());
  http.set_read_timeout(120, 0);
  json body = {{"model", "gpt2-tiny:arach"}, {"prompt", Reference("p48")["ids"]}, {"max_tokens", 3}, {"diagnostics", true}};
  httplib::Result asked = http.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(asked);
  ASSERT_EQ(asked->status, 200) << asked->body;
  const json answer = json::parse(asked->body);
  const json& attention = answer["choices"][0]["arach_attention"];
  const json& want = Reference("p48")["arach"];
  for (const char* key : {"sink_mass", "hub_mass", "hub_rows_sink_mass", "hub_rows_hub_mass"}) ExpectTableNear(attention[key], want[key], key);

  // Sampled (rate 1) but not asked: recorded in the metrics, not returned.
  body.erase("diagnostics");
  httplib::Result sampled = http.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(sampled);
  ASSERT_EQ(sampled->status, 200) << sampled->body;
  EXPECT_FALSE(json::parse(sampled->body)["choices"][0].contains("arach_attention"));
  arach::v1::GenerateRequest generate;
  generate.set_text("First Citizen:");
  generate.set_max_tokens(2);
  generate.mutable_variant()->set_arach(true);
  const grpc::Status status = client_->Generate(generate, [](const arach::v1::GenerateResponse&) {});
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(scrape("arach"), before + 3) << "every finished request is sampled at rate 1";
}

TEST_F(DiagnosticsServer, CliDiagnosticsPrintsTheMeansAndWritesAChart) {
  testing::ScopedTempDir dir;
  // Any text: the CLI's numbers are checked against Score with diagnostics on the same text.
  const std::string text = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n";
  {
    std::ofstream(dir.File("text.txt")) << text;
  }
  const std::string command = std::string(testing::CliBinary()) + " diagnostics --server=" + server_->grpc_address() + " --text=" +
                              dir.File("text.txt") + " --variants=base,arach --json --chart=" + dir.File("chart.svg") + " > " +
                              dir.File("out.json") + " 2> " + dir.File("err.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream out(dir.File("out.json"));
  const json report = json::parse(out);
  ASSERT_EQ(report["variants"].size(), 2u);
  for (int v = 0; v < 2; ++v) {
    arach::v1::ScoreRequest request;
    request.add_inputs()->set_text(text);
    request.mutable_variant()->set_arach(v == 1);
    request.set_diagnostics(true);
    arach::v1::ScoreResponse response;
    ASSERT_TRUE(client_->Score(request, &response).ok());
    const json& got = report["variants"][v];
    EXPECT_EQ(got["variant"], v == 0 ? "base" : "arach");
    ExpectTableNear(got["sink_mass"], Column(response.results(0).attention(), &arach::v1::LayerAttention::sink_mass), "sink");
    ExpectTableNear(got["hub_mass"], Column(response.results(0).attention(), &arach::v1::LayerAttention::hub_mass), "hub");
  }
  std::ifstream chart_file(dir.File("chart.svg"));
  std::stringstream chart;
  chart << chart_file.rdbuf();
  const std::string svg = chart.str();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 200);
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 3u) << "base sink, arach sink, arach hub";
  EXPECT_NE(svg.find("arach: own hub"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace arach
