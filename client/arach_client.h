// A small synchronous C++ client of arach.v1.Inference and grpc.health.v1.Health.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "arach/v1/inference.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace arach::client {

// TLS settings of a client channel: PEM contents (not paths). Empty root_certs = no TLS.
struct ClientTls {
  std::string root_certs;         // CA bundle that signed the server's certificate
  std::string cert_chain;         // client certificate, for mutual TLS
  std::string private_key;        // its key
  std::string server_name;        // overrides the name checked against the certificate
};

class ArachClient {
 public:
  // A channel to `target` (HOST:PORT): insecure, or TLS when tls.root_certs is set. A non-empty `api_key` is
  // sent with every call as its `authorization` metadata ("Bearer KEY").
  static std::unique_ptr<ArachClient> Connect(const std::string& target, const ClientTls& tls = {}, const std::string& api_key = "");

  using Deadline = std::optional<std::chrono::system_clock::time_point>;

  // Streams a generation, calling `on_message` for every response. `context` (optional) lets another
  // thread cancel the call with context->TryCancel(). Returns the call's final status.
  grpc::Status Generate(const arach::v1::GenerateRequest& request,
                        const std::function<void(const arach::v1::GenerateResponse&)>& on_message,
                        Deadline deadline = std::nullopt, grpc::ClientContext* context = nullptr);
  // Streams the assistant's turn of a conversation (Chat), like Generate.
  grpc::Status Chat(const arach::v1::ChatRequest& request, const std::function<void(const arach::v1::GenerateResponse&)>& on_message,
                    Deadline deadline = std::nullopt);
  grpc::Status Score(const arach::v1::ScoreRequest& request, arach::v1::ScoreResponse* response,
                     Deadline deadline = std::nullopt);
  grpc::Status Embed(const arach::v1::EmbedRequest& request, arach::v1::EmbedResponse* response,
                     Deadline deadline = std::nullopt);
  grpc::Status Rerank(const arach::v1::RerankRequest& request, arach::v1::RerankResponse* response,
                      Deadline deadline = std::nullopt);
  grpc::Status GetModelInfo(arach::v1::ModelInfo* info);
  // Loads or replaces (load_inplace) a LoRA adapter on a server run with --allow_runtime_lora_updating; `response`:
  // the adapters loaded after the change. The server reads the folder and uploads it: up to a minute.
  grpc::Status LoadLoraAdapter(const arach::v1::LoadLoraAdapterRequest& request, arach::v1::LoraAdaptersResponse* response);
  grpc::Status UnloadLoraAdapter(const arach::v1::UnloadLoraAdapterRequest& request, arach::v1::LoraAdaptersResponse* response);
  // The health of `service` ("" = the whole server).
  grpc::Status Health(const std::string& service, grpc::health::v1::HealthCheckResponse::ServingStatus* status);
  // Waits until the server reports SERVING or `timeout` passes.
  bool WaitServing(std::chrono::milliseconds timeout);
  // The raw stub, for calls this class does not wrap (e.g. Tokenize): call Authorize on their contexts.
  arach::v1::Inference::Stub& inference() { return *inference_; }
  // Adds the API key (when there is one) to a call's metadata.
  void Authorize(grpc::ClientContext* context) const;

 private:
  ArachClient(std::shared_ptr<grpc::Channel> channel, std::string api_key);
  std::string api_key_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<arach::v1::Inference::Stub> inference_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace arach::client
