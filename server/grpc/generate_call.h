// One Generate stream: a gRPC write reactor fed by the engine. The engine's observer queues messages; at
// most one write is in flight; the last message carries `finish`. A client cancel, a failed write or a
// passed deadline cancels the engine request, whose end then finishes the RPC.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "server/service_context.h"

namespace arach::server {

// Starts the call; gRPC owns the returned reactor (it deletes itself when done).
grpc::ServerWriteReactor<arach::v1::GenerateResponse>* StartGenerate(ServiceContext& context,
                                                                     grpc::CallbackServerContext* call,
                                                                     const arach::v1::GenerateRequest* request);

// A Chat call: the same stream, its prompt rendered from the messages by the model's chat template.
grpc::ServerWriteReactor<arach::v1::GenerateResponse>* StartChat(ServiceContext& context, grpc::CallbackServerContext* call,
                                                                 const arach::v1::ChatRequest* request);

}  // namespace arach::server
