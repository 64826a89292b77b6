#include "server/request_policy.h"

namespace arach::server {

RequestPolicy::RequestPolicy(bool prompt_perplexity, double diagnostics_sample_rate, uint64_t seed)
    : prompt_perplexity_(prompt_perplexity), diagnostics_sample_rate_(diagnostics_sample_rate), rng_(seed) {}

void RequestPolicy::Apply(EngineRequest& request) {
  if (prompt_perplexity_) request.sampling.prompt_logprobs = true;
  if (diagnostics_sample_rate_ <= 0.0 || request.attention_diagnostics) return;
  std::lock_guard<std::mutex> lock(mutex_);
  request.attention_diagnostics = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < diagnostics_sample_rate_;
}

}  // namespace arach::server
