// The paired comparison of one text under two variants, written once for the server's shadow scoring
// (server/shadow_scorer) and the client's `ab --paired` (client/cli/ab_paired): over the same completion
// tokens, the mean of log p_b - log p_a and the share of positions whose most likely token agrees.
// Header-only and dependency-free so that the client, which does not link the engine, uses it too.
#pragma once

#include <cstdint>
#include <span>

namespace arach {

struct PairedComparison {
  double logprob_difference = 0.0;  // mean over the positions of log p_b - log p_a
  double top1_agreement = 0.0;      // share of positions where argmax_a == argmax_b
  int positions = 0;
};

// The four spans hold the same positions (equal, non-zero lengths; the caller checks).
inline PairedComparison ComparePositions(std::span<const float> logprob_a, std::span<const float> logprob_b,
                                         std::span<const int32_t> argmax_a, std::span<const int32_t> argmax_b) {
  PairedComparison c;
  c.positions = static_cast<int>(logprob_a.size());
  if (c.positions == 0) return c;
  double difference = 0.0;
  int agree = 0;
  for (size_t i = 0; i < logprob_a.size(); ++i) {
    difference += static_cast<double>(logprob_b[i]) - static_cast<double>(logprob_a[i]);
    agree += argmax_a[i] == argmax_b[i] ? 1 : 0;
  }
  c.logprob_difference = difference / c.positions;
  c.top1_agreement = static_cast<double>(agree) / c.positions;
  return c;
}

}  // namespace arach
