// What the server adds to each generation request it submits, whichever API it came from: the prompt's
// log-probs for the perplexity metric (--prompt_perplexity; generation requests only), attention diagnostics for a sampled share of
// requests (--diagnostics_sample_rate, recorded in arach_attention_sink_mass), and the generation kept
// for shadow scoring for a sampled share of generation requests (--shadow_rate). Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "engine/request.h"

namespace arach::server {

class RequestPolicy {
 public:
  // Rates in [0, 1] (checked by ServerOptions).
  RequestPolicy(bool prompt_perplexity, double diagnostics_sample_rate, double shadow_rate, uint64_t seed);

  void Apply(EngineRequest& request);

 private:
  bool prompt_perplexity_;
  double diagnostics_sample_rate_;
  double shadow_rate_;
  std::mutex mutex_;
  std::mt19937_64 rng_;  // guarded by mutex_
};

}  // namespace arach::server
