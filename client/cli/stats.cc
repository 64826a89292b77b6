#include "client/cli/stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace arach::client {

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / values.size();
}

Interval Bootstrap(int n, const std::function<double(const std::vector<int>&)>& statistic, int resamples, uint64_t seed,
                   double level) {
  if (n == 0) return {};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, n - 1);
  std::vector<double> stats;
  stats.reserve(resamples);
  std::vector<int> sample(n);
  for (int r = 0; r < resamples; ++r) {
    for (int& i : sample) i = pick(rng);
    stats.push_back(statistic(sample));
  }
  const double tail = (1.0 - level) / 2.0;
  return {Percentile(stats, tail), Percentile(stats, 1.0 - tail)};
}

Interval BootstrapMean(const std::vector<double>& values, int resamples, uint64_t seed) {
  return Bootstrap(static_cast<int>(values.size()), [&](const std::vector<int>& idx) {
    double sum = 0.0;
    for (int i : idx) sum += values[i];
    return sum / idx.size();
  }, resamples, seed);
}

double McNemarExactP(int b, int c) {
  const int n = b + c;
  if (n == 0) return 1.0;
  const int k = std::min(b, c);
  // P(X <= k), X ~ Binomial(n, 1/2), summed in log space.
  double tail = 0.0;
  for (int i = 0; i <= k; ++i) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  }
  return std::min(1.0, 2.0 * tail);
}

}  // namespace arach::client
