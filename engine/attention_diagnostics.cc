#include "engine/attention_diagnostics.h"

#include <algorithm>
#include <numeric>

namespace arach {

double AttentionDiagnostics::MeanSinkMass() const {
  if (sink_mass.empty()) return 0.0;
  return std::accumulate(sink_mass.begin(), sink_mass.end(), 0.0) / static_cast<double>(sink_mass.size());
}

AttentionDiagnosticsAccumulator::AttentionDiagnosticsAccumulator(int num_layers, int num_heads)
    : num_layers_(num_layers),
      num_heads_(num_heads),
      sums_(static_cast<size_t>(num_layers) * kAttentionMassKinds * num_heads, 0.0) {}

void AttentionDiagnosticsAccumulator::Add(const StepAttentionDiagnostics& step, int seq, int rows) {
  for (int l = 0; l < num_layers_; ++l) {
    for (int kind = 0; kind < kAttentionMassKinds; ++kind) {
      for (int h = 0; h < num_heads_; ++h) {
        sums_[(static_cast<size_t>(l) * kAttentionMassKinds + kind) * num_heads_ + h] +=
            step.At(l, seq, static_cast<AttentionMassKind>(kind), h);
      }
    }
  }
  rows_ += rows;
}

void AttentionDiagnosticsAccumulator::Reset() {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  rows_ = 0;
}

AttentionDiagnostics AttentionDiagnosticsAccumulator::Means(bool with_hub_rows) const {
  AttentionDiagnostics d;
  d.num_layers = num_layers_;
  d.num_heads = num_heads_;
  const double inv_rows = rows_ > 0 ? 1.0 / rows_ : 0.0;
  auto means = [&](AttentionMassKind kind) {
    std::vector<float> out(static_cast<size_t>(num_layers_) * num_heads_);
    for (int l = 0; l < num_layers_; ++l) {
      for (int h = 0; h < num_heads_; ++h) {
        out[static_cast<size_t>(l) * num_heads_ + h] =
            static_cast<float>(sums_[(static_cast<size_t>(l) * kAttentionMassKinds + kind) * num_heads_ + h] * inv_rows);
      }
    }
    return out;
  };
  d.sink_mass = means(kVerbalRowsOnSink);
  d.hub_mass = means(kVerbalRowsOnHub);
  if (with_hub_rows) {
    d.hub_rows_sink_mass = means(kHubRowsOnSink);
    d.hub_rows_hub_mass = means(kHubRowsOnHub);
  }
  return d;
}

}  // namespace arach
