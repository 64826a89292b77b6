// Attention-sink diagnostics of one request: where its prompt's attention went, per layer and head.
// The kernels sum probabilities per step (AttentionParams::attention_mass); the accumulator adds the
// steps that compute the prompt and turns the sums into means over the prompt's query rows.
#pragma once

#include <vector>

#include "engine/backend/attention_params.h"

namespace arach {

// Means over the prompt's query rows i = 0..T-1, each [num_layers, num_heads] row-major:
//   sink_mass  = mean_i p(verbal i -> position 0)      hub_mass = mean_i p(verbal i -> hub i)   (0 without ARACH)
//   hub_rows_* = the same over the hub query rows (ARACH only; empty otherwise).
struct AttentionDiagnostics {
  int num_layers = 0;
  int num_heads = 0;
  std::vector<float> sink_mass;
  std::vector<float> hub_mass;
  std::vector<float> hub_rows_sink_mass;
  std::vector<float> hub_rows_hub_mass;

  bool has_hub_rows() const { return !hub_rows_sink_mass.empty(); }
  // Mean of sink_mass over layers and heads: the one number per request that the metrics record.
  double MeanSinkMass() const;
};

class AttentionDiagnosticsAccumulator {
 public:
  AttentionDiagnosticsAccumulator(int num_layers, int num_heads);

  // Adds sequence `seq`'s sums from one step that computed `rows` more of the prompt.
  void Add(const StepAttentionDiagnostics& step, int seq, int rows);
  // Forgets everything (the prompt is being recomputed after a preemption).
  void Reset();
  int rows() const { return rows_; }
  // The means over the rows added so far; `with_hub_rows` when the request ran ARACH.
  AttentionDiagnostics Means(bool with_hub_rows) const;

 private:
  int num_layers_;
  int num_heads_;
  int rows_ = 0;
  std::vector<double> sums_;  // [num_layers, kAttentionMassKinds, num_heads]
};

}  // namespace arach
