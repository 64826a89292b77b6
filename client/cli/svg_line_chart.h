// A line chart as an SVG document: one polyline per series over integer x positions 0..n-1, a y axis from
// 0 to the largest value (rounded up to 1, 2, 2.5 or 5 times a power of ten), grid lines, tick labels and a
// legend. Enough for the per-layer figures arach-cli writes; no dependency.
#pragma once

#include <string>
#include <vector>

namespace arach::client {

struct ChartSeries {
  std::string name;            // legend text
  std::vector<double> values;  // y at x = 0, 1, ...
  bool dashed = false;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

// The SVG text of `chart` (text is XML-escaped).
std::string RenderSvg(const LineChart& chart);

}  // namespace arach::client
