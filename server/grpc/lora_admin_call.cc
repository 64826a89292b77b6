#include "server/grpc/lora_admin_call.h"

#include <thread>
#include <utility>

#include "server/admission.h"
#include "server/grpc/call_credentials.h"
#include "server/grpc/status_mapping.h"
#include "server/lora_admin.h"

namespace arach::server {
namespace {

grpc::ServerUnaryReactor* StartChange(ServiceContext& context, grpc::CallbackServerContext* call, LoraAdminRequest change,
                                      bool load, arach::v1::LoraAdaptersResponse* response) {
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  if (absl::Status enabled = CheckLoraAdminEnabled(context); !enabled.ok()) {
    reactor->Finish(ToGrpcStatus(enabled));
    return reactor;
  }
  absl::StatusOr<CallTicket> ticket = AdmitCall(context, AuthorizationOf(*call));
  const absl::Status status = ticket.ok() ? CheckLoraAdminAllowed(context, ticket->caller()) : ticket.status();
  if (!status.ok()) {
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  }
  // The request's values are checked there too (ApplyLoraAdmin).
  std::thread([&context, reactor, response, load, change = std::move(change), ticket = std::move(*ticket)]() mutable {
    const absl::Status done = ApplyLoraAdmin(context, ticket.engine(), ticket.caller(), change, load);
    if (done.ok()) {
      for (const std::string& name : ticket.engine().lora_names()) response->add_lora_adapters(name);
    }
    reactor->Finish(ToGrpcStatus(done));
  }).detach();  // (the ticket, released as the thread ends, keeps a drain waiting for it)
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* StartLoadLoraAdapter(ServiceContext& context, grpc::CallbackServerContext* call,
                                               const arach::v1::LoadLoraAdapterRequest* request,
                                               arach::v1::LoraAdaptersResponse* response) {
  return StartChange(context, call, LoraAdminRequest{request->lora_name(), request->lora_path(), request->load_inplace()},
                     /*load=*/true, response);
}

grpc::ServerUnaryReactor* StartUnloadLoraAdapter(ServiceContext& context, grpc::CallbackServerContext* call,
                                                 const arach::v1::UnloadLoraAdapterRequest* request,
                                                 arach::v1::LoraAdaptersResponse* response) {
  return StartChange(context, call, LoraAdminRequest{request->lora_name(), "", false}, /*load=*/false, response);
}

}  // namespace arach::server
