// The arach.v1.Inference service (gRPC callback API): one reactor per call.
#pragma once

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "server/service_context.h"

namespace arach::server {

class InferenceService final : public arach::v1::Inference::CallbackService {
 public:
  explicit InferenceService(ServiceContext& context) : context_(context) {}

  grpc::ServerWriteReactor<arach::v1::GenerateResponse>* Generate(grpc::CallbackServerContext* call,
                                                                  const arach::v1::GenerateRequest* request) override;
  grpc::ServerWriteReactor<arach::v1::GenerateResponse>* Chat(grpc::CallbackServerContext* call,
                                                              const arach::v1::ChatRequest* request) override;
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* call, const arach::v1::ScoreRequest* request,
                                  arach::v1::ScoreResponse* response) override;
  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* call, const arach::v1::EmbedRequest* request,
                                  arach::v1::EmbedResponse* response) override;
  grpc::ServerUnaryReactor* Rerank(grpc::CallbackServerContext* call, const arach::v1::RerankRequest* request,
                                   arach::v1::RerankResponse* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* call, const arach::v1::GetModelInfoRequest* request,
                                         arach::v1::ModelInfo* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* call, const arach::v1::TokenizeRequest* request,
                                     arach::v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* call, const arach::v1::DetokenizeRequest* request,
                                       arach::v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* LoadLoraAdapter(grpc::CallbackServerContext* call, const arach::v1::LoadLoraAdapterRequest* request,
                                            arach::v1::LoraAdaptersResponse* response) override;
  grpc::ServerUnaryReactor* UnloadLoraAdapter(grpc::CallbackServerContext* call, const arach::v1::UnloadLoraAdapterRequest* request,
                                              arach::v1::LoraAdaptersResponse* response) override;

 private:
  ServiceContext& context_;
};

}  // namespace arach::server
