#include "server/grpc/inference_service.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/tokenizer/unicode.h"
#include "server/admission.h"
#include "server/grpc/call_credentials.h"
#include "server/grpc/generate_call.h"
#include "server/grpc/lora_admin_call.h"
#include "server/grpc/request_mapping.h"
#include "server/grpc/score_call.h"
#include "server/grpc/status_mapping.h"

namespace arach::server {
namespace {

// Admits a unary call answered on `reactor`; when it is refused, finishes the call and returns nothing.
std::optional<CallTicket> AdmitUnary(ServiceContext& context, const grpc::CallbackServerContext& call,
                                     grpc::ServerUnaryReactor* reactor) {
  absl::StatusOr<CallTicket> ticket = AdmitCall(context, AuthorizationOf(call));
  if (!ticket.ok()) {
    reactor->Finish(ToGrpcStatus(ticket.status()));
    return std::nullopt;
  }
  return std::move(*ticket);
}

}  // namespace

grpc::ServerWriteReactor<arach::v1::GenerateResponse>* InferenceService::Generate(grpc::CallbackServerContext* call,
                                                                                  const arach::v1::GenerateRequest* request) {
  return StartGenerate(context_, call, request);
}

grpc::ServerWriteReactor<arach::v1::GenerateResponse>* InferenceService::Chat(grpc::CallbackServerContext* call,
                                                                              const arach::v1::ChatRequest* request) {
  return StartChat(context_, call, request);
}

grpc::ServerUnaryReactor* InferenceService::Score(grpc::CallbackServerContext* call, const arach::v1::ScoreRequest* request,
                                                  arach::v1::ScoreResponse* response) {
  return StartScore(context_, call, request, response);
}

grpc::ServerUnaryReactor* InferenceService::Embed(grpc::CallbackServerContext* call, const arach::v1::EmbedRequest* request,
                                                  arach::v1::EmbedResponse* response) {
  return StartEmbed(context_, call, request, response);
}

grpc::ServerUnaryReactor* InferenceService::Rerank(grpc::CallbackServerContext* call, const arach::v1::RerankRequest* request,
                                                   arach::v1::RerankResponse* response) {
  return StartRerank(context_, call, request, response);
}

grpc::ServerUnaryReactor* InferenceService::GetModelInfo(grpc::CallbackServerContext* call,
                                                         const arach::v1::GetModelInfoRequest* /*request*/,
                                                         arach::v1::ModelInfo* info) {
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  const std::optional<CallTicket> ticket = AdmitUnary(context_, *call, reactor);
  if (!ticket) return reactor;
  const Engine* engine = &ticket->engine();
  const ModelConfig& c = engine->model_config();
  info->set_model(context_.served_model_name);
  info->set_architecture(std::string(ArchitectureName(c.arch)));
  info->set_vocab_size(c.vocab_size);
  info->set_hidden_size(c.hidden_size);
  info->set_num_layers(c.num_layers);
  info->set_num_heads(c.num_heads);
  info->set_num_kv_heads(c.num_kv_heads);
  info->set_context_length(c.max_positions);
  info->set_tokenizer(engine->tokenizer().Describe());
  info->set_adapter_loaded(engine->has_adapter());
  info->set_adapter_expansion(engine->adapter_expansion());
  for (const std::string& lora : engine->lora_names()) info->add_lora_adapters(lora);
  FillServedVariant(ResolvedVariant{context_.variants->default_variant(), ""}, info->mutable_default_variant());
  info->set_device(context_.device);
  if (const ChatTemplate* chat_template = engine->chat_template(); chat_template != nullptr) {
    info->set_chat_template(chat_template->origin());
  }
  const EngineStats stats = engine->stats();
  info->set_kv_block_size(engine->kv_block_size());
  info->set_kv_cache_dtype(std::string(DTypeName(engine->kv_cache_dtype())));
  info->set_kv_cache_bytes_per_token(static_cast<uint32_t>(engine->kv_bytes_per_token()));
  if (engine->model_config().quantization.quantized()) info->set_weight_quantization(engine->model_config().quantization.Describe());
  info->set_kv_blocks(stats.kv_blocks_total);
  info->set_max_num_seqs(engine->config().max_num_seqs);
  info->set_max_num_batched_tokens(engine->config().max_num_batched_tokens);
  info->set_bos_token_id(c.bos_token_id < 0 ? 0 : c.bos_token_id);
  for (int id : c.eos_token_ids) info->add_eos_token_ids(id);
  if (const auto& experiment = context_.variants->experiment()) {
    std::string text = experiment->name + ":";
    for (size_t i = 0; i < experiment->arms.size(); ++i) {
      const ExperimentArm& arm = experiment->arms[i];
      absl::StrAppend(&text, i == 0 ? " " : ", ", arm.name, "=", arm.variant.Describe(), " ", arm.weight);
    }
    info->set_experiment(text);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* call, const arach::v1::TokenizeRequest* request,
                                                     arach::v1::TokenizeResponse* response) {
  const Clock::time_point start = Clock::now();
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  const std::optional<CallTicket> ticket = AdmitUnary(context_, *call, reactor);
  if (!ticket) return reactor;
  const Engine* engine = &ticket->engine();
  for (int i = 0; i < request->texts_size(); ++i) {
    if (request->texts(i).size() > context_.limits.max_tokenize_bytes) {
      reactor->Finish(ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat("texts[", i, "]: ", request->texts(i).size(),
                                                                           " bytes exceed the limit of ",
                                                                           context_.limits.max_tokenize_bytes))));
      return reactor;
    }
    auto ids = engine->tokenizer().Encode(request->texts(i), /*add_special_tokens=*/request->add_bos());
    if (!ids.ok()) {
      reactor->Finish(ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat("texts[", i, "]: ", ids.status().message()))));
      return reactor;
    }
    arach::v1::TokenIds* out = response->add_tokens();
    for (int32_t id : *ids) out->add_ids(id);
  }
  context_.metrics->RecordTokenizerCall("Tokenize", std::chrono::duration<double>(Clock::now() - start).count());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Detokenize(grpc::CallbackServerContext* call, const arach::v1::DetokenizeRequest* request,
                                                       arach::v1::DetokenizeResponse* response) {
  const Clock::time_point start = Clock::now();
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  const std::optional<CallTicket> ticket = AdmitUnary(context_, *call, reactor);
  if (!ticket) return reactor;
  const Engine& engine = ticket->engine();
  const bool skip_special = request->has_skip_special_tokens() ? request->skip_special_tokens() : true;
  for (int i = 0; i < request->tokens_size(); ++i) {
    const auto& ids = request->tokens(i).ids();
    const std::string field = absl::StrCat("tokens[", i, "].ids");
    absl::Status status = ids.size() > context_.limits.max_detokenize_ids
                              ? absl::InvalidArgumentError(absl::StrCat(field, ": ", ids.size(), " ids exceed the limit of ",
                                                                        context_.limits.max_detokenize_ids))
                              : CheckTokenIds(std::span<const int32_t>(ids.data(), ids.size()), engine.model_config().vocab_size, field);
    absl::StatusOr<std::string> text = status.ok() ? engine.tokenizer().Decode(std::span<const int32_t>(ids.data(), ids.size()), skip_special)
                                                   : absl::StatusOr<std::string>(status);
    if (!text.ok()) {
      RecordRejection(context_, text.status(), ticket->caller().key);
      reactor->Finish(ToGrpcStatus(text.status()));
      return reactor;
    }
    response->add_texts(SanitizeUtf8(*text));
  }
  context_.metrics->RecordTokenizerCall("Detokenize", std::chrono::duration<double>(Clock::now() - start).count());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::LoadLoraAdapter(grpc::CallbackServerContext* call,
                                                            const arach::v1::LoadLoraAdapterRequest* request,
                                                            arach::v1::LoraAdaptersResponse* response) {
  return StartLoadLoraAdapter(context_, call, request, response);
}

grpc::ServerUnaryReactor* InferenceService::UnloadLoraAdapter(grpc::CallbackServerContext* call,
                                                              const arach::v1::UnloadLoraAdapterRequest* request,
                                                              arach::v1::LoraAdaptersResponse* response) {
  return StartUnloadLoraAdapter(context_, call, request, response);
}

}  // namespace arach::server
