#include "tests/testing/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace arach::testing {
namespace {

std::string Family(const std::string& sample_name, const std::map<std::string, std::string>& types) {
  if (types.count(sample_name)) return sample_name;
  for (const char* suffix : {"_bucket", "_sum", "_count", "_total"}) {
    if (absl::EndsWith(sample_name, suffix)) {
      const std::string base = sample_name.substr(0, sample_name.size() - std::strlen(suffix));
      if (types.count(base)) return base;
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<PrometheusText> ParsePrometheusText(const std::string& text) {
  PrometheusText out;
  static const std::regex kSample(R"re(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})? (\S+)( \d+)?$)re");
  // One label and the comma after it (none after the last).
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,)?)re");
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (absl::StartsWith(line, "# TYPE ") || absl::StartsWith(line, "# HELP ")) {
      const std::vector<std::string> parts = absl::StrSplit(line.substr(7), absl::MaxSplits(' ', 1));
      if (parts.size() != 2) return absl::InvalidArgumentError(absl::StrCat("line ", number, ": malformed ", line));
      (absl::StartsWith(line, "# TYPE ") ? out.types : out.helps)[parts[0]] = parts[1];
      continue;
    }
    if (line[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(line, m, kSample)) return absl::InvalidArgumentError(absl::StrCat("line ", number, ": not a sample: ", line));
    const std::string name = m[1];
    if (Family(name, out.types).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", name, " has no # TYPE"));
    }
    std::vector<std::string> labels;
    bool has_model = false;
    std::string rest = m[3].matched ? m[3].str() : "";  // label="value" pairs, comma separated (values may hold commas)
    while (!rest.empty()) {
      std::smatch label;
      if (!std::regex_search(rest, label, kLabel, std::regex_constants::match_continuous) ||
          (!label[3].matched && label[0].length() != rest.size())) {
        return absl::InvalidArgumentError(absl::StrCat("line ", number, ": bad labels at ", rest));
      }
      if (label[1] == "model") {
        if (has_model) return absl::InvalidArgumentError(absl::StrCat("line ", number, ": two model labels"));
        has_model = true;
        out.models.insert(label[2]);
      } else {
        labels.push_back(label[0].str().substr(0, label[0].length() - (label[3].matched ? label[3].length() : 0)));
      }
      rest = label.suffix();
    }
    std::sort(labels.begin(), labels.end());
    double value;
    const std::string v = m[4];
    if (v == "+Inf") {
      value = INFINITY;
    } else if (v == "-Inf") {
      value = -INFINITY;
    } else if (v == "NaN") {
      value = NAN;
    } else if (!absl::SimpleAtod(v, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": bad value ", v));
    }
    if (!has_model) ++out.samples_without_model;
    out.samples[absl::StrCat(name, "{", absl::StrJoin(labels, ","), "}")] = value;
  }
  return out;
}

double PrometheusText::Value(const std::string& name, const std::string& labels) const {
  const auto it = samples.find(absl::StrCat(name, "{", labels, "}"));
  return it == samples.end() ? 0.0 : it->second;
}

double PrometheusText::Sum(const std::string& name, const std::map<std::string, std::string>& filter) const {
  double sum = 0.0;
  const std::string prefix = name + "{";
  for (const auto& [series, value] : samples) {
    if (!absl::StartsWith(series, prefix)) continue;
    bool match = true;
    for (const auto& [k, v] : filter) match &= absl::StrContains(series, absl::StrCat(k, "=\"", v, "\""));
    if (match) sum += value;
  }
  return sum;
}

}  // namespace arach::testing
