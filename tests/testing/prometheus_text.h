// A strict reader of the Prometheus text exposition format (version 0.0.4), for tests.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace arach::testing {

struct PrometheusText {
  std::map<std::string, std::string> types;  // metric family -> counter | gauge | histogram | ...
  std::map<std::string, std::string> helps;
  std::map<std::string, double> samples;     // "name{a=\"x\",b=\"y\"}" (labels sorted) -> value

  // The value of `name` with exactly these labels ("" for none, else `a="x",b="y"` sorted); 0 if absent.
  double Value(const std::string& name, const std::string& labels = "") const;
  // Sum over all series of `name` whose labels contain every `key="value"` in `filter`.
  double Sum(const std::string& name, const std::map<std::string, std::string>& filter = {}) const;
};

// Parses `text`; every line must be a comment, a HELP/TYPE line or a well-formed sample of a family with a TYPE.
absl::StatusOr<PrometheusText> ParsePrometheusText(const std::string& text);

}  // namespace arach::testing
