// arach-cli load-lora / unload-lora: the server's LoadLoraAdapter and UnloadLoraAdapter (a server run with
// --allow_runtime_lora_updating; a key with the scope `adapters` where keys are configured). Prints the adapters
// loaded after the change, as JSON.
#include <cstdio>

#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/print_json.h"

namespace arach::client {

int RunLoadLora(const LoraAdminOptions& o) {
  if (o.name.empty() || o.path.empty()) {
    std::fprintf(stderr, "arach-cli load-lora: --lora NAME and --lora_path PATH (a PEFT folder on the server) are required\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("load-lora", client.status());
  arach::v1::LoadLoraAdapterRequest request;
  request.set_lora_name(o.name);
  request.set_lora_path(o.path);
  request.set_load_inplace(o.load_inplace);
  arach::v1::LoraAdaptersResponse response;
  const grpc::Status status = (*client)->LoadLoraAdapter(request, &response);
  if (!status.ok()) return ReportRpcFailure("load-lora", status);
  PrintJson(response);
  return 0;
}

int RunUnloadLora(const LoraAdminOptions& o) {
  if (o.name.empty()) {
    std::fprintf(stderr, "arach-cli unload-lora: --lora NAME is required\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("unload-lora", client.status());
  arach::v1::UnloadLoraAdapterRequest request;
  request.set_lora_name(o.name);
  arach::v1::LoraAdaptersResponse response;
  const grpc::Status status = (*client)->UnloadLoraAdapter(request, &response);
  if (!status.ok()) return ReportRpcFailure("unload-lora", status);
  PrintJson(response);
  return 0;
}

}  // namespace arach::client
