#include "server/shadow_scorer.h"

#include "absl/strings/str_cat.h"
#include "engine/core/paired_comparison.h"

namespace arach::server {

absl::StatusOr<ShadowComparison> CompareShadow(const KeptGeneration& served, const FinishInfo& against) {
  const int total = static_cast<int>(served.sequence.size());
  const int generated = total - served.prompt_len;
  if (generated <= 0 || static_cast<int>(served.raw_logprobs.size()) != generated ||
      static_cast<int>(served.argmax.size()) != generated) {
    return absl::InternalError(absl::StrCat("shadow: the served generation holds ", served.raw_logprobs.size(), " log-probs for ",
                                            generated, " generated tokens"));
  }
  if (static_cast<int>(against.prompt_logprobs.size()) != total - 1 || static_cast<int>(against.prompt_argmax.size()) != total - 1) {
    return absl::InternalError(absl::StrCat("shadow: the score holds ", against.prompt_logprobs.size(), " log-probs for ", total,
                                            " tokens"));
  }
  // Completion token t (t >= prompt_len) is predicted by the score's row t - 1. a = against, b = served.
  const size_t first = static_cast<size_t>(served.prompt_len) - 1;
  const PairedComparison paired = ComparePositions(
      std::span<const float>(against.prompt_logprobs).subspan(first, generated), served.raw_logprobs,
      std::span<const int32_t>(against.prompt_argmax).subspan(first, generated), served.argmax);
  ShadowComparison c;
  c.tokens = paired.positions;
  c.logprob_delta = paired.logprob_difference;
  c.top1_agreement = paired.top1_agreement;
  return c;
}

// Receives the shadow score on the engine's step thread and records the comparison.
class ShadowScorer::ShadowObserver : public RequestObserver {
 public:
  ShadowObserver(ShadowScorer& scorer, Variant served, Variant against, KeptGeneration generated)
      : scorer_(scorer), served_(served), against_(against), generated_(std::move(generated)) {}

  void OnChunk(const StreamChunk&) override {}
  void OnFinish(const FinishInfo& info) override {
    --scorer_.in_flight_;
    if (info.reason != FinishReason::kLength && info.reason != FinishReason::kStop) {
      scorer_.metrics_.RecordShadowDropped(info.reason == FinishReason::kError ? "error" : "cancelled");
      return;
    }
    absl::StatusOr<ShadowComparison> c = CompareShadow(generated_, info);
    if (!c.ok()) {
      scorer_.metrics_.RecordShadowDropped("error");
      return;
    }
    scorer_.metrics_.RecordShadow(served_, against_, c->logprob_delta, c->top1_agreement);
  }

 private:
  ShadowScorer& scorer_;
  Variant served_;
  Variant against_;
  KeptGeneration generated_;
};

ShadowScorer::ShadowScorer(ShadowOptions options, std::vector<Variant> experiment_variants, ServerMetrics& metrics)
    : options_(std::move(options)), experiment_variants_(std::move(experiment_variants)), metrics_(metrics) {}

Variant ShadowScorer::AgainstFor(const Variant& served) const {
  if (options_.variant) return *options_.variant;
  for (const Variant& arm : experiment_variants_) {
    if (!(arm == served)) return arm;
  }
  return Variant{};  // base
}

void ShadowScorer::OnFinished(Engine& engine, const Variant& served, const FinishInfo& info) {
  if (!info.generated || (info.reason != FinishReason::kLength && info.reason != FinishReason::kStop)) return;
  if (static_cast<int>(info.generated->sequence.size()) <= info.generated->prompt_len) return;  // nothing generated
  const Variant against = AgainstFor(served);
  if (against == served) return;  // nothing to compare with
  if (in_flight_.fetch_add(1) >= options_.max_in_flight) {
    --in_flight_;
    metrics_.RecordShadowDropped("saturated");
    return;
  }
  EngineRequest request;
  request.kind = RequestKind::kScore;
  request.request_class = RequestClass::kBackground;
  request.prompt = info.generated->sequence;
  request.variant = against;
  request.cache_salt = info.generated->cache_salt;  // its blocks stay in the live request's namespace
  request.lora = info.generated->lora;               // scored by the model that generated it
  auto observer = std::make_shared<ShadowObserver>(*this, served, against, *info.generated);
  if (!engine.Submit(std::move(request), std::move(observer)).ok()) {
    --in_flight_;  // the engine refused it: the observer never runs
    metrics_.RecordShadowDropped("error");
  }
}

}  // namespace arach::server
