// Statistics for evaluation and A/B reports: percentiles, bootstrap confidence intervals (plain and
// paired) and McNemar's exact test for paired binary outcomes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/percentile.h"

namespace arach::client {

struct Interval {
  double low = 0, high = 0;
  bool Contains(double value) const { return low <= value && value <= high; }
};

double Mean(const std::vector<double>& values);

// Percentile bootstrap interval (level e.g. 0.95) of statistic(indices) over `n` items resampled with
// replacement; `statistic` receives the resampled item indices.
Interval Bootstrap(int n, const std::function<double(const std::vector<int>&)>& statistic, int resamples, uint64_t seed,
                   double level = 0.95);

// The interval of the mean of `values`.
Interval BootstrapMean(const std::vector<double>& values, int resamples, uint64_t seed);

// Exact two-sided McNemar p-value from the discordant counts: b = (A wrong, B right), c = (A right, B wrong).
double McNemarExactP(int b, int c);

}  // namespace arach::client
