#include "client/arach_client.h"

#include <thread>

namespace arach::client {

std::unique_ptr<ArachClient> ArachClient::Connect(const std::string& target, const ClientTls& tls, const std::string& api_key) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!tls.root_certs.empty()) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = tls.root_certs;
    options.pem_cert_chain = tls.cert_chain;
    options.pem_private_key = tls.private_key;
    credentials = grpc::SslCredentials(options);
    if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  }
  return std::unique_ptr<ArachClient>(new ArachClient(grpc::CreateCustomChannel(target, credentials, args), api_key));
}

ArachClient::ArachClient(std::shared_ptr<grpc::Channel> channel, std::string api_key)
    : api_key_(std::move(api_key)),
      channel_(std::move(channel)),
      inference_(arach::v1::Inference::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)) {}

grpc::Status ArachClient::Generate(const arach::v1::GenerateRequest& request,
                                   const std::function<void(const arach::v1::GenerateResponse&)>& on_message,
                                   Deadline deadline, grpc::ClientContext* context) {
  grpc::ClientContext local;
  grpc::ClientContext* ctx = context != nullptr ? context : &local;
  if (deadline) ctx->set_deadline(*deadline);
  Authorize(ctx);
  std::unique_ptr<grpc::ClientReader<arach::v1::GenerateResponse>> reader = inference_->Generate(ctx, request);
  arach::v1::GenerateResponse response;
  while (reader->Read(&response)) on_message(response);
  return reader->Finish();
}

grpc::Status ArachClient::Chat(const arach::v1::ChatRequest& request,
                               const std::function<void(const arach::v1::GenerateResponse&)>& on_message, Deadline deadline) {
  grpc::ClientContext ctx;
  if (deadline) ctx.set_deadline(*deadline);
  Authorize(&ctx);
  std::unique_ptr<grpc::ClientReader<arach::v1::GenerateResponse>> reader = inference_->Chat(&ctx, request);
  arach::v1::GenerateResponse response;
  while (reader->Read(&response)) on_message(response);
  return reader->Finish();
}

grpc::Status ArachClient::Score(const arach::v1::ScoreRequest& request, arach::v1::ScoreResponse* response,
                                Deadline deadline) {
  grpc::ClientContext ctx;
  if (deadline) ctx.set_deadline(*deadline);
  Authorize(&ctx);
  return inference_->Score(&ctx, request, response);
}

grpc::Status ArachClient::Embed(const arach::v1::EmbedRequest& request, arach::v1::EmbedResponse* response,
                                Deadline deadline) {
  grpc::ClientContext ctx;
  if (deadline) ctx.set_deadline(*deadline);
  Authorize(&ctx);
  return inference_->Embed(&ctx, request, response);
}

grpc::Status ArachClient::Rerank(const arach::v1::RerankRequest& request, arach::v1::RerankResponse* response,
                                 Deadline deadline) {
  grpc::ClientContext ctx;
  if (deadline) ctx.set_deadline(*deadline);
  Authorize(&ctx);
  return inference_->Rerank(&ctx, request, response);
}

grpc::Status ArachClient::GetModelInfo(arach::v1::ModelInfo* info) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  Authorize(&ctx);
  return inference_->GetModelInfo(&ctx, arach::v1::GetModelInfoRequest(), info);
}

grpc::Status ArachClient::LoadLoraAdapter(const arach::v1::LoadLoraAdapterRequest& request, arach::v1::LoraAdaptersResponse* response) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  Authorize(&ctx);
  return inference_->LoadLoraAdapter(&ctx, request, response);
}

grpc::Status ArachClient::UnloadLoraAdapter(const arach::v1::UnloadLoraAdapterRequest& request, arach::v1::LoraAdaptersResponse* response) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  Authorize(&ctx);
  return inference_->UnloadLoraAdapter(&ctx, request, response);
}

void ArachClient::Authorize(grpc::ClientContext* context) const {
  if (!api_key_.empty()) context->AddMetadata("authorization", "Bearer " + api_key_);
}

grpc::Status ArachClient::Health(const std::string& service, grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = health_->Check(&ctx, request, &response);
  if (s.ok()) *status = response.status();
  return s;
}

bool ArachClient::WaitServing(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    grpc::health::v1::HealthCheckResponse::ServingStatus status;
    if (Health("", &status).ok() && status == grpc::health::v1::HealthCheckResponse::SERVING) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace arach::client
