// The prompt-only calls: every input runs through the engine as a prompt-only request, Score's with prompt
// log-probs (kScore), Embed's for its pooled hidden states (kEmbed, cut and normalized by embedding_answer.h); the reply is sent
// when all have finished.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "server/service_context.h"

namespace arach::server {

grpc::ServerUnaryReactor* StartScore(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::ScoreRequest* request, arach::v1::ScoreResponse* response);
grpc::ServerUnaryReactor* StartEmbed(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::EmbedRequest* request, arach::v1::EmbedResponse* response);

}  // namespace arach::server
