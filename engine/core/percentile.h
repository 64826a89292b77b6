// The p-th percentile of a sample (p in [0, 1]), interpolated linearly between the two nearest ranks (numpy's
// default): the one definition behind arach-cli's reports (bench, ab, eval) and the benchmarks' latency
// figures. Header-only and dependency-free, like paired_comparison.h, so that the client uses it too.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace arach {

// 0 for an empty sample.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace arach
