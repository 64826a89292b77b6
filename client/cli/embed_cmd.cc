// arach-cli embed: the embedding of a text under a variant (gRPC Embed).
#include <cstdio>

#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/print_json.h"
#include "client/cli/text_arg.h"
#include "client/cli/variant_arg.h"

namespace arach::client {

int RunEmbed(const EmbedOptions& o) {
  const absl::StatusOr<std::string> text = TextArgument(o.text, o.file);
  if (!text.ok()) return ReportError("embed", text.status());
  if (o.dimensions < 0) return ReportError("embed", absl::InvalidArgumentError("--dimensions: must be 0 (all) or more"));
  arach::v1::EmbedRequest request;
  request.add_inputs()->set_text(*text);
  request.set_dimensions(static_cast<uint32_t>(o.dimensions));
  if (absl::Status s = ApplyVariant(o.variant.variant, o.variant.arach_offset, o.variant.experiment_key, &request, o.variant.lora); !s.ok()) {
    return ReportError("embed", s);
  }
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("embed", client.status());
  arach::v1::EmbedResponse response;
  const grpc::Status status = (*client)->Embed(request, &response);
  if (!status.ok()) return ReportRpcFailure("embed", status);
  if (o.json) {
    PrintJson(response);
    return 0;
  }
  const arach::v1::Embedding& e = response.embeddings(0);
  std::printf("variant %s: %d dimensions, %u tokens\n", response.variant().name().c_str(), e.values_size(), e.prompt_tokens());
  for (int i = 0; i < e.values_size(); ++i) std::printf("%s%.6f", i == 0 ? "" : " ", e.values(i));
  std::printf("\n");
  return 0;
}

}  // namespace arach::client
