// The reference that the paged-attention kernels (CPU and CUDA) are tested against: one query over
// explicit key/value rows, with the optional ARACH hub key, computed naively in double precision.
#pragma once

#include <vector>

namespace arach::testing {

// softmax over {q . keys[j] * scale : first <= j <= limit} (plus the hub logit q . hub_k * scale + offset
// when hub_k is given) applied to values[first..limit] (and hub_v). q, each key/value row, hub_k and hub_v:
// [head_dim]. `first` > 0 is a sliding window's start.
// `mass` (optional) receives the probabilities on position 0 (0 when first > 0) and on the hub.
struct NaiveMass {
  double sink = 0.0;
  double hub = 0.0;
};
std::vector<float> NaiveAttention(const float* q, const std::vector<const float*>& keys,
                                  const std::vector<const float*>& values, int first, int limit, const float* hub_k,
                                  const float* hub_v, float offset, float scale, int head_dim, NaiveMass* mass = nullptr);

// Pointers to the rows of a contiguous [rows, width] matrix.
std::vector<const float*> RowPointers(const std::vector<float>& matrix, int width);

}  // namespace arach::testing
