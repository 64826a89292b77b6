// arach-cli score: per-token log-probs and perplexity of a text under a variant.
#include <cstdio>

#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/print_json.h"
#include "client/cli/text_arg.h"
#include "client/cli/variant_arg.h"

namespace arach::client {

int RunScore(const ScoreOptions& o) {
  const absl::StatusOr<std::string> text = TextArgument(o.text, o.file);
  if (!text.ok()) return ReportError("score", text.status());
  arach::v1::ScoreRequest request;
  request.add_inputs()->set_text(*text);
  if (absl::Status s = ApplyVariant(o.variant.variant, o.variant.arach_offset, o.variant.experiment_key, &request, o.variant.lora); !s.ok()) {
    return ReportError("score", s);
  }
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("score", client.status());
  arach::v1::ScoreResponse response;
  const grpc::Status status = (*client)->Score(request, &response);
  if (!status.ok()) return ReportRpcFailure("score", status);
  if (o.json) {
    PrintJson(response);
  } else {
    const arach::v1::ScoreResult& r = response.results(0);
    std::printf("variant %s: %u tokens scored, total log-prob %.4f, perplexity %.4f\n", response.variant().name().c_str(),
                r.scored_tokens(), r.total_logprob(), r.perplexity());
  }
  return 0;
}

}  // namespace arach::client
