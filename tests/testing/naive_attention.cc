#include "tests/testing/naive_attention.h"

#include <algorithm>
#include <cmath>

namespace arach::testing {

std::vector<float> NaiveAttention(const float* q, const std::vector<const float*>& keys,
                                  const std::vector<const float*>& values, int first, int limit, const float* hub_k,
                                  const float* hub_v, float offset, float scale, int head_dim, NaiveMass* mass) {
  std::vector<double> logits;  // [limit - first + 1 (+ 1 hub)]
  for (int j = first; j <= limit; ++j) {
    double dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * keys[j][d];
    logits.push_back(dot * scale);
  }
  if (hub_k != nullptr) {
    double dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * hub_k[d];
    logits.push_back(dot * scale + offset);
  }
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double& l : logits) sum += (l = std::exp(l - max_logit));
  std::vector<double> out(head_dim, 0.0);
  const size_t visible = static_cast<size_t>(limit - first + 1);
  if (mass != nullptr) {
    mass->sink = first == 0 ? logits[0] / sum : 0.0;
    mass->hub = hub_k != nullptr ? logits[visible] / sum : 0.0;
  }
  for (size_t j = 0; j < logits.size(); ++j) {
    const float* v = j < visible ? values[first + j] : hub_v;
    for (int d = 0; d < head_dim; ++d) out[d] += logits[j] / sum * v[d];
  }
  return std::vector<float>(out.begin(), out.end());
}

std::vector<const float*> RowPointers(const std::vector<float>& matrix, int width) {
  std::vector<const float*> rows;
  for (size_t start = 0; start + width <= matrix.size(); start += width) rows.push_back(&matrix[start]);
  return rows;
}

}  // namespace arach::testing
