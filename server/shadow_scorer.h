// Paired shadow scoring (--shadow_rate, --shadow_variant): a sampled share of finished generation requests
// (RequestPolicy marks them at submission with keep_generated) is scored again, prompt + completion, under
// another variant as background work, which the engine runs only on spare budget and preempts first. The
// comparison of the same text under both variants removes the variance of different prompts and samples:
// per request, the completion's mean log-prob under the serving variant minus under the other
// (arach_shadow_logprob_delta) and the share of completion tokens on which both variants' most likely
// token agrees (arach_shadow_top1_agreement). Shadow work beyond a bound is dropped and counted.
#pragma once

#include <atomic>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "server/metrics.h"

namespace arach::server {

struct ShadowOptions {
  std::optional<Variant> variant;  // compared against; unset: the experiment's first other arm, else base
  int max_in_flight = 64;          // shadow scores queued or running at most; more are dropped
};

// One shadowed request's comparison.
struct ShadowComparison {
  double logprob_delta = 0.0;   // mean over the completion of log p_served - log p_against
  double top1_agreement = 0.0;  // share of completion positions whose argmax agrees
  int tokens = 0;               // completion tokens compared
};

// Compares the served generation (its raw log-probs and argmax per step) with the scores of the same
// sequence under the other variant (prompt_logprobs and prompt_argmax of a kScore request).
absl::StatusOr<ShadowComparison> CompareShadow(const KeptGeneration& served, const FinishInfo& against);

class ShadowScorer {
 public:
  // `experiment_variants`: the arms of the running experiment (empty: none).
  ShadowScorer(ShadowOptions options, std::vector<Variant> experiment_variants, ServerMetrics& metrics);

  // The variant a request served by `served` is compared against.
  Variant AgainstFor(const Variant& served) const;
  // Called with every finished generation request; one that kept its generation and was answered is
  // scored under AgainstFor(served) on `engine` (background priority), or dropped (counted) when the
  // shadow work in flight is at its bound or the engine refuses it.
  void OnFinished(Engine& engine, const Variant& served, const FinishInfo& info);
  int in_flight() const { return in_flight_.load(); }

 private:
  class ShadowObserver;

  ShadowOptions options_;
  std::vector<Variant> experiment_variants_;
  ServerMetrics& metrics_;
  std::atomic<int> in_flight_{0};
};

}  // namespace arach::server
