// The prompt-only calls: every input runs through the engine as a prompt-only request, Score's with prompt
// log-probs (kScore), Embed's for its pooled hidden states (kEmbed, cut and normalized by embedding_answer.h), Rerank's
// texts embedded, or on a cross-encoder its (query, document) pairs classified (kClassify), and ranked
// (similarity_scores.h); the reply is sent when all have finished.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "server/service_context.h"

namespace arach::server {

grpc::ServerUnaryReactor* StartScore(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::ScoreRequest* request, arach::v1::ScoreResponse* response);
grpc::ServerUnaryReactor* StartEmbed(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::EmbedRequest* request, arach::v1::EmbedResponse* response);
grpc::ServerUnaryReactor* StartRerank(ServiceContext& context, grpc::CallbackServerContext* call,
                                      const arach::v1::RerankRequest* request, arach::v1::RerankResponse* response);

}  // namespace arach::server
