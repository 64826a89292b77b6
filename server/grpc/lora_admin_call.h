// gRPC's LoadLoraAdapter and UnloadLoraAdapter (server/lora_admin.h's rules, HTTP's alike). The change runs on a
// thread of its own (it reads the adapter's folder and waits for the engine's step thread), holding the call's
// admission ticket, so that a drain waits for it.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.pb.h"
#include "server/service_context.h"

namespace arach::server {

grpc::ServerUnaryReactor* StartLoadLoraAdapter(ServiceContext& context, grpc::CallbackServerContext* call,
                                               const arach::v1::LoadLoraAdapterRequest* request,
                                               arach::v1::LoraAdaptersResponse* response);
grpc::ServerUnaryReactor* StartUnloadLoraAdapter(ServiceContext& context, grpc::CallbackServerContext* call,
                                                 const arach::v1::UnloadLoraAdapterRequest* request,
                                                 arach::v1::LoraAdaptersResponse* response);

}  // namespace arach::server
