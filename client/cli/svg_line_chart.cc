#include "client/cli/svg_line_chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/core/markup_escape.h"

namespace arach::client {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 70, kRight = 190, kTop = 50, kBottom = 60;  // margins; the legend sits on the right
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// The smallest of 1, 2, 2.5, 5 x 10^k at or above `value` (1 for nothing positive): the top of the y axis.
double NiceCeiling(double value) {
  if (!(value > 0.0)) return 1.0;
  const double decade = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (step * decade >= value * (1.0 - 1e-9)) return step * decade;
  }
  return 10.0 * decade;
}

}  // namespace

std::string RenderSvg(const LineChart& chart) {
  size_t points = 0;
  double y_max = 0.0;
  for (const ChartSeries& s : chart.series) {
    points = std::max(points, s.values.size());
    for (double v : s.values) y_max = std::max(y_max, std::isfinite(v) ? v : 0.0);
  }
  y_max = NiceCeiling(y_max);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double x_step = points > 1 ? plot_w / static_cast<double>(points - 1) : 0.0;
  auto x_of = [&](size_t i) { return kLeft + (points > 1 ? x_step * static_cast<double>(i) : plot_w / 2); };
  auto y_of = [&](double v) { return kTop + plot_h * (1.0 - std::clamp(v, 0.0, y_max) / y_max); };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.0f\" y=\"28\" font-size=\"15\" text-anchor=\"middle\">%s</text>\n",
                                        kLeft + plot_w / 2, EscapeMarkup(chart.title)));
  for (int t = 0; t <= 5; ++t) {  // horizontal grid and y ticks
    const double v = y_max * t / 5.0, y = y_of(v);
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", kLeft, y,
                                          kLeft + plot_w, y));
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", kLeft - 6, y + 4, v));
  }
  for (size_t i = 0; i < points; ++i) {  // x ticks
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", x_of(i),
                                          kTop + plot_h + 18, static_cast<int>(i)));
  }
  absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                                        kLeft, kTop, plot_w, plot_h));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", kLeft + plot_w / 2,
                                        kHeight - 18, EscapeMarkup(chart.x_label)));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">%s</text>\n",
                                        kTop + plot_h / 2, kTop + plot_h / 2, EscapeMarkup(chart.y_label)));
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const ChartSeries& series = chart.series[s];
    const char* color = kColors[s % (sizeof(kColors) / sizeof(kColors[0]))];
    const char* dash = series.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string polyline;
    for (size_t i = 0; i < series.values.size(); ++i) {
      absl::StrAppend(&polyline, i == 0 ? "" : " ", absl::StrFormat("%.1f,%.1f", x_of(i), y_of(series.values[i])));
    }
    absl::StrAppend(&svg, absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n", color,
                                          dash, polyline));
    for (size_t i = 0; i < series.values.size(); ++i) {
      absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x_of(i),
                                            y_of(series.values[i]), color));
    }
    const double ly = kTop + 10 + 22.0 * static_cast<double>(s), lx = kLeft + plot_w + 16;
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                                          lx, ly, lx + 28, ly, color, dash));
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 34, ly + 4, EscapeMarkup(series.name)));
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace arach::client
