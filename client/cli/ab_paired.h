// arach-cli ab --paired: each answered request's prompt + completion is scored under the two compared
// variants, so that they are compared on the same text: per request the completion's mean log-prob
// difference (b - a) and the share of completion positions whose most likely token agrees, then their means
// with bootstrap intervals. This is the client's view of what the server's shadow scoring records for live
// traffic (--shadow_rate: arach_shadow_logprob_delta, arach_shadow_top1_agreement), with per-request values.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arach/v1/inference.pb.h"
#include "client/arach_client.h"
#include "nlohmann/json.hpp"

namespace arach::client {

struct PairedRequest {
  std::vector<int32_t> prompt;      // token ids
  std::vector<int32_t> completion;  // generated token ids
  std::string served;               // the variant that generated it
};

struct PairedArm {
  std::string name;
  arach::v1::VariantSpec spec;
};

struct PairedOptions {
  int concurrency = 4;
  int bootstrap = 2000;
  uint64_t bootstrap_seed = 1;
};

// One request's comparison from the two scores of its prompt + completion (`prompt_len` prompt tokens).
struct PairedValues {
  double logprob_difference = 0.0;  // mean over the completion of log p_b - log p_a
  double top1_agreement = 0.0;
};
absl::StatusOr<PairedValues> ComparePaired(const arach::v1::ScoreResult& a, const arach::v1::ScoreResult& b, int prompt_len);

// Scores every request under `a` and `b` and reports the paired comparison (JSON; failures are errors).
absl::StatusOr<nlohmann::json> RunPaired(ArachClient& client, const PairedArm& a, const PairedArm& b,
                                         const std::vector<PairedRequest>& requests, const PairedOptions& options);

}  // namespace arach::client
