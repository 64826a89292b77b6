#include "client/cli/ab_paired.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "client/cli/load_loop.h"
#include "client/cli/stats.h"
#include "engine/core/paired_comparison.h"

namespace arach::client {

using json = nlohmann::json;

absl::StatusOr<PairedValues> ComparePaired(const arach::v1::ScoreResult& a, const arach::v1::ScoreResult& b, int prompt_len) {
  const int total = a.token_ids_size();
  if (b.token_ids_size() != total || total <= prompt_len || a.logprobs_size() != total - 1 || b.logprobs_size() != total - 1 ||
      a.argmax_ids_size() != total - 1 || b.argmax_ids_size() != total - 1) {
    return absl::FailedPreconditionError(absl::StrCat("paired scores do not cover the ", total, " tokens (is the server older than "
                                                      "this client? ScoreResult.argmax_ids is needed)"));
  }
  // Completion token t (t >= prompt_len) is predicted by row t - 1.
  const size_t first = static_cast<size_t>(prompt_len) - 1, n = static_cast<size_t>(total - prompt_len);
  const PairedComparison c = ComparePositions(std::span<const float>(a.logprobs().data(), a.logprobs_size()).subspan(first, n),
                                              std::span<const float>(b.logprobs().data(), b.logprobs_size()).subspan(first, n),
                                              std::span<const int32_t>(a.argmax_ids().data(), a.argmax_ids_size()).subspan(first, n),
                                              std::span<const int32_t>(b.argmax_ids().data(), b.argmax_ids_size()).subspan(first, n));
  return PairedValues{c.logprob_difference, c.top1_agreement};
}

namespace {

json MeanWithInterval(const std::vector<double>& values, const PairedOptions& o) {
  const Interval ci = BootstrapMean(values, o.bootstrap, o.bootstrap_seed);
  return {{"mean", Mean(values)}, {"ci95", {ci.low, ci.high}}, {"requests", values.size()}};
}

}  // namespace

absl::StatusOr<json> RunPaired(ArachClient& client, const PairedArm& a, const PairedArm& b, const std::vector<PairedRequest>& requests,
                               const PairedOptions& options) {
  std::vector<absl::StatusOr<PairedValues>> values(requests.size(), absl::UnknownError("not scored"));
  RunClosedLoop(static_cast<int>(requests.size()), options.concurrency, [&](int i) {
    const PairedRequest& r = requests[static_cast<size_t>(i)];
    arach::v1::ScoreResult scores[2];
    const PairedArm* arms[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      arach::v1::ScoreRequest request;
      arach::v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
      for (int32_t id : r.prompt) ids->add_ids(id);
      for (int32_t id : r.completion) ids->add_ids(id);
      *request.mutable_variant() = arms[k]->spec;
      arach::v1::ScoreResponse response;
      const grpc::Status status = client.Score(request, &response);
      if (!status.ok()) {
        values[static_cast<size_t>(i)] = absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                                                      absl::StrCat("scoring request ", i, " under ", arms[k]->name, ": ", status.error_message()));
        return;
      }
      scores[k] = response.results(0);
    }
    values[static_cast<size_t>(i)] = ComparePaired(scores[0], scores[1], static_cast<int>(r.prompt.size()));
  });
  std::vector<double> differences, agreements;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_served;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!values[i].ok()) return values[i].status();
    differences.push_back(values[i]->logprob_difference);
    agreements.push_back(values[i]->top1_agreement);
    by_served[requests[i].served].first.push_back(values[i]->logprob_difference);
    by_served[requests[i].served].second.push_back(values[i]->top1_agreement);
  }
  json report = {{"a", a.name}, {"b", b.name}, {"mean_logprob_difference", MeanWithInterval(differences, options)},
                 {"top1_agreement", MeanWithInterval(agreements, options)}};
  for (const auto& [served, pair] : by_served) {
    report["by_served_variant"][served] = {{"mean_logprob_difference", MeanWithInterval(pair.first, options)},
                                           {"top1_agreement", MeanWithInterval(pair.second, options)}};
  }
  return report;
}

}  // namespace arach::client
