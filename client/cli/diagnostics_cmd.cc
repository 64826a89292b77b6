// arach-cli diagnostics: where a text's attention goes under each variant. Scores the text with attention
// diagnostics once per variant and prints, per layer (mean over heads), the mass the query rows put on
// the first token (the attention sink) and, with ARACH, on their own hub; writes the same as an SVG chart.
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/svg_line_chart.h"
#include "client/cli/variant_arg.h"
#include "engine/core/mapped_file.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

struct VariantDiagnostics {
  std::string asked;   // as written in --variants
  std::string served;  // the variant name the server reports
  std::vector<double> layer_sink;  // [layers]: sink_mass averaged over heads
  std::vector<double> layer_hub;   // [layers]: hub_mass averaged over heads
  nlohmann::json detail;           // per layer and head, as the server returned them
  bool arach = false;
};

double MeanOf(const google::protobuf::RepeatedField<float>& values) {
  double sum = 0.0;
  for (float v : values) sum += v;
  return values.empty() ? 0.0 : sum / values.size();
}

nlohmann::json Table(const arach::v1::AttentionDiagnostics& d, const google::protobuf::RepeatedField<float>& (arach::v1::LayerAttention::*field)() const) {
  nlohmann::json table = nlohmann::json::array();
  for (const arach::v1::LayerAttention& layer : d.layers()) table.push_back(std::vector<float>((layer.*field)().begin(), (layer.*field)().end()));
  return table;
}

absl::StatusOr<VariantDiagnostics> ScoreWithDiagnostics(ArachClient& client, const std::string& text, const std::string& variant,
                                                  uint32_t* tokens) {
  arach::v1::ScoreRequest request;
  request.add_inputs()->set_text(text);
  request.set_diagnostics(true);
  if (absl::Status s = ApplyVariant(variant, std::nullopt, "", &request); !s.ok()) return s;
  arach::v1::ScoreResponse response;
  const grpc::Status status = client.Score(request, &response);
  if (!status.ok()) return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  const arach::v1::ScoreResult& result = response.results(0);
  const arach::v1::AttentionDiagnostics& d = result.attention();
  if (d.layers().empty()) return absl::FailedPreconditionError("the server returned no attention diagnostics (is it older than this client?)");
  *tokens = static_cast<uint32_t>(result.token_ids_size());
  VariantDiagnostics out;
  out.asked = variant;
  out.served = response.variant().name();
  out.arach = response.variant().arach();
  for (const arach::v1::LayerAttention& layer : d.layers()) {
    out.layer_sink.push_back(MeanOf(layer.sink_mass()));
    out.layer_hub.push_back(MeanOf(layer.hub_mass()));
  }
  out.detail = {{"variant", out.served},
                {"sink_mass", Table(d, &arach::v1::LayerAttention::sink_mass)},
                {"hub_mass", Table(d, &arach::v1::LayerAttention::hub_mass)},
                {"mean_sink_mass", d.mean_sink_mass()}};
  if (out.arach) {
    out.detail["hub_rows_sink_mass"] = Table(d, &arach::v1::LayerAttention::hub_rows_sink_mass);
    out.detail["hub_rows_hub_mass"] = Table(d, &arach::v1::LayerAttention::hub_rows_hub_mass);
  }
  return out;
}

void PrintTable(const std::vector<VariantDiagnostics>& variants, uint32_t tokens) {
  std::printf("attention of %u query rows, per layer (mean over heads): on the first token (sink) and on the row's own hub\n",
              tokens);
  std::printf("%5s", "layer");
  for (const VariantDiagnostics& v : variants) {
    std::printf("  %14s", (v.served + " sink").c_str());
    if (v.arach) std::printf("  %14s", (v.served + " hub").c_str());
  }
  std::printf("\n");
  const size_t layers = variants.front().layer_sink.size();
  for (size_t l = 0; l <= layers; ++l) {
    std::printf("%5s", l < layers ? std::to_string(l).c_str() : "mean");
    for (const VariantDiagnostics& v : variants) {
      auto value = [&](const std::vector<double>& per_layer) {
        if (l < layers) return per_layer[l];
        double sum = 0.0;
        for (double x : per_layer) sum += x;
        return sum / static_cast<double>(per_layer.size());
      };
      std::printf("  %14.4f", value(v.layer_sink));
      if (v.arach) std::printf("  %14.4f", value(v.layer_hub));
    }
    std::printf("\n");
  }
}

}  // namespace

int RunDiagnostics(const DiagnosticsOptions& o) {
  if (o.text_file.empty()) return ReportError("diagnostics", absl::InvalidArgumentError("--text: give a text file"));
  absl::StatusOr<std::string> text = ReadFileToString(o.text_file);
  if (!text.ok()) return ReportError("diagnostics", absl::InvalidArgumentError(text.status().message()));
  const std::vector<std::string> names = absl::StrSplit(o.variants, ',', absl::SkipWhitespace());
  if (names.empty()) return ReportError("diagnostics", absl::InvalidArgumentError("--variants: name at least one variant"));
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("diagnostics", client.status());
  std::vector<VariantDiagnostics> variants;
  uint32_t tokens = 0;
  for (const std::string& name : names) {
    absl::StatusOr<VariantDiagnostics> measured = ScoreWithDiagnostics(**client, *text, name, &tokens);
    if (!measured.ok()) return ReportError("diagnostics", absl::Status(measured.status().code(), absl::StrCat(name, ": ", measured.status().message())));
    variants.push_back(std::move(*measured));
  }
  if (o.json) {
    nlohmann::json report = {{"tokens", tokens}, {"variants", nlohmann::json::array()}};
    for (const VariantDiagnostics& v : variants) report["variants"].push_back(v.detail);
    std::printf("%s\n", report.dump(1).c_str());
  } else {
    PrintTable(variants, tokens);
  }
  if (!o.chart.empty()) {
    LineChart chart;
    chart.title = absl::StrFormat("Attention per layer (%u tokens, mean over heads)", tokens);
    chart.x_label = "layer";
    chart.y_label = "attention probability";
    for (const VariantDiagnostics& v : variants) {
      chart.series.push_back({v.served + ": sink (token 0)", v.layer_sink, false});
      if (v.arach) chart.series.push_back({v.served + ": own hub", v.layer_hub, true});
    }
    std::ofstream out(o.chart);
    out << RenderSvg(chart);
    out.close();
    if (!out) return ReportError("diagnostics", absl::UnavailableError(absl::StrCat("cannot write the chart to ", o.chart)));
    std::fprintf(stderr, "chart written to %s\n", o.chart.c_str());
  }
  return 0;
}

}  // namespace arach::client
