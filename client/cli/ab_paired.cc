#include "client/cli/ab_paired.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "client/cli/load_loop.h"
#include "client/cli/stats.h"

namespace arach::client {

using json = nlohmann::json;

absl::StatusOr<PairedValues> ComparePaired(const arach::v1::ScoreResult& a, const arach::v1::ScoreResult& b, int prompt_len) {
  const int total = a.token_ids_size();
  if (b.token_ids_size() != total || total <= prompt_len || a.logprobs_size() != total - 1 || b.logprobs_size() != total - 1 ||
      a.argmax_ids_size() != total - 1 || b.argmax_ids_size() != total - 1) {
    return absl::FailedPreconditionError(absl::StrCat("paired scores do not cover the ", total, " tokens (is the server older than "
                                                      "this client? ScoreResult.argmax_ids is needed)"));
  }
  PairedValues v;
  int agree = 0;
  for (int t = prompt_len; t < total; ++t) {  // token t is predicted by row t - 1
    v.logprob_difference += b.logprobs(t - 1) - a.logprobs(t - 1);
    agree += a.argmax_ids(t - 1) == b.argmax_ids(t - 1) ? 1 : 0;
  }
  const int n = total - prompt_len;
  v.logprob_difference /= n;
  v.top1_agreement = static_cast<double>(agree) / n;
  return v;
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
