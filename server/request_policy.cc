#include "server/request_policy.h"

namespace arach::server {

RequestPolicy::RequestPolicy(bool prompt_perplexity, double diagnostics_sample_rate, double shadow_rate, uint64_t seed)
    : prompt_perplexity_(prompt_perplexity),
      diagnostics_sample_rate_(diagnostics_sample_rate),
      shadow_rate_(shadow_rate),
      rng_(seed) {}

void RequestPolicy::Apply(EngineRequest& request) {
  // (A score request has its prompt's log-probs anyway; an embedding's would cost the LM head on every prompt row and
  // its prefix-cache reuse.)
  if (prompt_perplexity_ && request.kind == RequestKind::kGenerate) request.sampling.prompt_logprobs = true;
  std::lock_guard<std::mutex> lock(mutex_);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (diagnostics_sample_rate_ > 0.0 && !request.attention_diagnostics) {
    request.attention_diagnostics = uniform(rng_) < diagnostics_sample_rate_;
  }
  if (shadow_rate_ > 0.0 && request.kind == RequestKind::kGenerate) request.keep_generated = uniform(rng_) < shadow_rate_;
}

}  // namespace arach::server
