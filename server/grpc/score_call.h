// One Score call: every input runs through the engine as a prompt-only request with prompt log-probs;
// the reply is sent when all have finished.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "server/service_context.h"

namespace arach::server {

grpc::ServerUnaryReactor* StartScore(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::ScoreRequest* request, arach::v1::ScoreResponse* response);

}  // namespace arach::server
