// A strict reader of the Prometheus text exposition format (version 0.0.4), for tests.
#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace arach::testing {

// The server puts its served model's name on every series (label `model`); the reader keeps that label
// apart (models, samples_without_model) so that checks name only the labels they are about.
struct PrometheusText {
  std::map<std::string, std::string> types;  // metric family -> counter | gauge | histogram | ...
  std::map<std::string, std::string> helps;
  std::map<std::string, double> samples;     // "name{a=\"x\",b=\"y\"}" (labels sorted, `model` left out) -> value
  std::set<std::string> models;              // the values of the `model` label seen
  int samples_without_model = 0;

  // The value of `name` with exactly these labels ("" for none, else `a="x",b="y"` sorted); 0 if absent.
  double Value(const std::string& name, const std::string& labels = "") const;
  // Sum over all series of `name` whose labels contain every `key="value"` in `filter`.
  double Sum(const std::string& name, const std::map<std::string, std::string>& filter = {}) const;
};

// Parses `text`; every line must be a comment, a HELP/TYPE line or a well-formed sample of a family with a TYPE.
absl::StatusOr<PrometheusText> ParsePrometheusText(const std::string& text);

}  // namespace arach::testing
