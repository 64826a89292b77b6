#include "server/grpc/score_call.h"

#include <cmath>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/admission.h"
#include "server/embedding_answer.h"
#include "server/similarity_scores.h"
#include "server/grpc/call_credentials.h"
#include "server/request_log.h"
#include "server/grpc/request_mapping.h"
#include "server/grpc/status_mapping.h"

namespace arach::server {
namespace {

class PromptCallReactor;

// What a prompt-only call asks, Score, Embed or Rerank alike: its inputs and request fields, and where its answer goes.
struct PromptCall {
  // kScore (ScoreResponse), kEmbed (EmbedResponse; Rerank's texts on an embedding model) or kClassify (Rerank's
  // pairs on a cross-encoder)
  RequestKind kind = RequestKind::kScore;
  const google::protobuf::RepeatedPtrField<arach::v1::ScoreInput>* inputs = nullptr;  // Score, Embed
  const arach::v1::RerankRequest* rerank = nullptr;                                    // Rerank
  arach::v1::VariantSpec variant;
  std::string experiment_key;
  std::string request_id;
  bool diagnostics = false;  // Score
  std::optional<int> priority;
  std::string cache_salt;
  std::optional<int64_t> dimensions;  // Embed
  bool normalize = true;          // Embed
  arach::v1::ScoreResponse* score_response = nullptr;
  arach::v1::EmbedResponse* embed_response = nullptr;
  arach::v1::RerankResponse* rerank_response = nullptr;

  const char* rpc() const { return rerank != nullptr ? "Rerank" : kind == RequestKind::kScore ? "Score" : "Embed"; }
  void SetRequestId(const std::string& id) const {
    if (score_response != nullptr) score_response->set_request_id(id);
    if (embed_response != nullptr) embed_response->set_request_id(id);
    if (rerank_response != nullptr) rerank_response->set_request_id(id);
  }
  arach::v1::ServedVariant* served_variant() const {
    if (rerank_response != nullptr) return rerank_response->mutable_variant();
    return score_response != nullptr ? score_response->mutable_variant() : embed_response->mutable_variant();
  }
  // The engine requests the call makes on `engine`: one per input, or for Rerank one per text (the query, then each
  // document) on an embedding model and one per document (its pair with the query) on a cross-encoder.
  int RequestCount(const Engine& engine) const {
    if (rerank == nullptr) return inputs->size();
    return rerank->documents_size() + (engine.classifier_token_ids().empty() ? 1 : 0);
  }
};

// The fields ScoreRequest and EmbedRequest share, as a PromptCall of `kind`.
template <typename Request>
PromptCall PromptCallOf(RequestKind kind, const Request& request) {
  PromptCall call;
  call.kind = kind;
  call.inputs = &request.inputs();
  call.variant = request.variant();
  call.experiment_key = request.experiment_key();
  call.request_id = request.request_id();
  if (request.has_priority()) call.priority = request.priority();
  call.cache_salt = request.cache_salt();
  return call;
}

// Collects the engine's results of all inputs; finishes the call (under its lock, see generate_call.cc)
// when the last one arrives or the first fails.
class PromptCallCollector : public std::enable_shared_from_this<PromptCallCollector> {
 public:
  // `usage`: the call's (null when it was refused at the gate); `key`: its API key's name.
  PromptCallCollector(PromptCallReactor* reactor, ServiceContext& context, const PromptCall& call, ResolvedVariant variant, int inputs,
                 std::string request_id, std::shared_ptr<CallUsage> usage, std::string key)
      : reactor_(reactor), context_(context), call_(call), variant_(std::move(variant)), pending_(inputs),
        request_id_(std::move(request_id)), usage_(std::move(usage)), key_(std::move(key)), started_(Clock::now()) {
    call_.SetRequestId(request_id_);
    for (int i = 0; i < inputs; ++i) {
      if (call_.score_response != nullptr) call_.score_response->add_results();
      if (call_.embed_response != nullptr) call_.embed_response->add_embeddings();
    }
    if (call_.rerank != nullptr) rerank_.resize(static_cast<size_t>(inputs));
  }

  // The observer of input `index`.
  std::shared_ptr<RequestObserver> ObserverFor(int index, std::vector<int32_t> ids);
  void Done(int index, const FinishInfo& info, const std::vector<int32_t>& ids);
  void FinishNow(const grpc::Status& status);
  void Detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    reactor_ = nullptr;
  }

 private:
  void FinishLocked(const grpc::Status& status);
  // The answer of one input.
  void FillScore(arach::v1::ScoreResult* result, const FinishInfo& info, const std::vector<int32_t>& ids);
  void FillEmbedding(arach::v1::Embedding* embedding, const FinishInfo& info, const std::vector<int32_t>& ids);
  // Rerank: keeps what request `index` answered (an embedding, or the pair's score); false (the call failed) where it
  // answered nothing to keep.
  bool KeepRerankAnswerLocked(int index, const FinishInfo& info);
  // Rerank, every request answered: the documents' scores, ranked into the response.
  void FillRerank();

  std::mutex mutex_;
  PromptCallReactor* reactor_;
  ServiceContext& context_;
  const PromptCall call_;
  ResolvedVariant variant_;  // the variant and adapter that serve the call (empty when it was refused)
  int pending_;
  std::string request_id_;
  std::shared_ptr<CallUsage> usage_;  // null: refused before a variant was chosen
  std::string key_;
  Clock::time_point started_;
  int64_t scored_prompt_tokens_ = 0;
  bool finished_ = false;
  // Rerank: per request, its embedding (the query's first) or, on a cross-encoder, its pair's score.
  struct RerankAnswer {
    std::vector<float> embedding;
    double score = 0;
  };
  std::vector<RerankAnswer> rerank_;
};

class InputObserver : public RequestObserver {
 public:
  InputObserver(std::shared_ptr<PromptCallCollector> collector, int index, std::vector<int32_t> ids)
      : collector_(std::move(collector)), index_(index), ids_(std::move(ids)) {}
  void OnChunk(const StreamChunk&) override {}
  void OnFinish(const FinishInfo& info) override { collector_->Done(index_, info, ids_); }

 private:
  std::shared_ptr<PromptCallCollector> collector_;
  int index_;
  std::vector<int32_t> ids_;
};

class PromptCallReactor : public grpc::ServerUnaryReactor {
 public:
  PromptCallReactor(ServiceContext& context, grpc::CallbackServerContext* grpc_call, const PromptCall& call) : context_(context) {
    const absl::StatusOr<std::string> chosen_id = ChosenRequestId(call.request_id);
    const std::string request_id = chosen_id.ok() ? *chosen_id : NewRequestId();  // a refused id is not logged
    absl::StatusOr<CallTicket> ticket = AdmitCall(context, AuthorizationOf(*grpc_call));
    if (!ticket.ok()) {
      collector_ = std::make_shared<PromptCallCollector>(this, context, call, ResolvedVariant{}, 0, request_id, nullptr, "unknown");
      collector_->FinishNow(ToGrpcStatus(ticket.status()));
      return;
    }
    ticket_ = std::move(*ticket);
    const std::string& key = ticket_.caller().key;
    absl::StatusOr<ResolvedVariant> resolved =
        ResolveVariant(context, ticket_, ToRequestedVariant(call.variant, call.experiment_key), "variant");
    if (resolved.ok()) FillServedVariant(*resolved, call.served_variant());
    PromptCall served = call;
    if (call.rerank != nullptr) {
      served.kind = ticket_.engine().classifier_token_ids().empty() ? RequestKind::kEmbed : RequestKind::kClassify;
    }
    collector_ = std::make_shared<PromptCallCollector>(this, context, served, resolved.ok() ? *resolved : ResolvedVariant{},
                                                  served.RequestCount(ticket_.engine()), request_id, ticket_.usage(), key);
    absl::Status status = chosen_id.ok() ? resolved.status() : chosen_id.status();
    if (status.ok()) status = Submit(grpc_call, served, *resolved);
    if (!status.ok()) {
      RecordRejection(context, status, key);
      CancelSubmitted();
      collector_->FinishNow(ToGrpcStatus(status));
    }
  }

  void OnCancel() override { CancelSubmitted(); }
  void OnDone() override {
    collector_->Detach();
    ticket_.Release();
    delete this;
  }

 private:
  // Rerank's requests: each text embedded (the query, then the documents), or each (query, document) pair classified.
  absl::Status RerankRequests(const PromptCall& call, const Engine& engine, const Variant& variant, std::vector<EngineRequest>& requests,
                              std::vector<std::string>& prompt_fields) {
    const arach::v1::RerankRequest& rerank = *call.rerank;
    if (rerank.documents().empty()) return absl::InvalidArgumentError("documents: empty");
    ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(engine, static_cast<size_t>(call.RequestCount(engine)), "documents", std::nullopt));
    const NamedText query{rerank.query(), "query"};
    for (int i = -1; i < rerank.documents_size(); ++i) {
      const NamedText text = i < 0 ? query : NamedText{rerank.documents(i), absl::StrCat("documents[", i, "]")};
      if (call.kind == RequestKind::kClassify) {
        if (i < 0) continue;
        ARACH_ASSIGN_OR_RETURN(EngineRequest pair, PairEngineRequest(engine, context_.limits, query, text, std::nullopt, variant));
        requests.push_back(std::move(pair));
      } else {
        EngineRequest& r = requests.emplace_back();
        r.kind = RequestKind::kEmbed;
        ARACH_ASSIGN_OR_RETURN(r.prompt, EncodeTextPrompt(engine, context_.limits, text.field, EmbeddingInputText(engine, text.text)));
      }
      prompt_fields.push_back(text.field);
    }
    return absl::OkStatus();
  }

  // Score's and Embed's requests: one per input.
  absl::Status InputRequests(const PromptCall& call, const Engine& engine, std::vector<EngineRequest>& requests,
                             std::vector<std::string>& prompt_fields) {
    const int inputs = call.inputs->size();
    if (call.kind == RequestKind::kEmbed) {
      ARACH_RETURN_IF_ERROR(CheckEmbeddingRequest(engine, static_cast<size_t>(inputs), "inputs", call.dimensions));
    } else if (inputs == 0) {
      return absl::InvalidArgumentError("inputs: empty");
    } else if (inputs > context_.limits.max_score_inputs) {
      return absl::InvalidArgumentError(absl::StrCat("inputs: ", inputs, " inputs exceed the limit of ", context_.limits.max_score_inputs));
    }
    for (int i = 0; i < inputs; ++i) {
      const arach::v1::ScoreInput& input = call.inputs->Get(i);
      EngineRequest& r = requests.emplace_back();
      r.kind = call.kind;
      ARACH_ASSIGN_OR_RETURN(r.prompt, PromptIds(engine, context_.limits, absl::StrCat("inputs[", i, "]"),
                                                 input.input_case() == arach::v1::ScoreInput::kText,
                                                 call.kind == RequestKind::kEmbed ? EmbeddingInputText(engine, input.text()) : input.text(),
                                                 input.input_case() == arach::v1::ScoreInput::kTokenIds, input.token_ids(),
                                                 &prompt_fields.emplace_back()));
    }
    return absl::OkStatus();
  }

  absl::Status Submit(grpc::CallbackServerContext* grpc_call, const PromptCall& call, const ResolvedVariant& variant) {
    Engine& engine = ticket_.engine();
    if (call.diagnostics) ARACH_RETURN_IF_ERROR(RequireScope(ticket_.caller(), kScopeDiagnostics, "diagnostics"));
    std::vector<EngineRequest> requests;
    std::vector<std::string> prompt_fields;
    if (call.rerank != nullptr) {
      ARACH_RETURN_IF_ERROR(RerankRequests(call, engine, variant.variant, requests, prompt_fields));
    } else {
      ARACH_RETURN_IF_ERROR(InputRequests(call, engine, requests, prompt_fields));
    }
    const int inputs = static_cast<int>(requests.size());
    int64_t tokens = 0;  // what the call may use: every input's tokens
    for (EngineRequest& r : requests) {
      r.variant = variant.variant;
      r.lora = variant.lora;
      r.attention_diagnostics = call.diagnostics;
      r.priority = ticket_.PriorityFor(call.priority);
      r.cache_salt = ticket_.CacheSaltFor(call.cache_salt);
      tokens += static_cast<int64_t>(r.prompt.size());
    }
    ARACH_RETURN_IF_ERROR(ticket_.ReserveTokens(tokens, call.rerank != nullptr ? "documents" : "inputs"));
    for (int i = 0; i < inputs; ++i) {
      EngineRequest& r = requests[static_cast<size_t>(i)];
      const std::string& prompt_field = prompt_fields[static_cast<size_t>(i)];
      context_.policy->Apply(r);
      if (grpc_call->deadline() != std::chrono::system_clock::time_point::max()) {
        r.deadline = Clock::now() + (grpc_call->deadline() - std::chrono::system_clock::now());
      }
      std::vector<int32_t> ids = r.prompt;
      ARACH_ASSIGN_OR_RETURN(const uint64_t id, engine.Submit(std::move(r), collector_->ObserverFor(i, std::move(ids)),
                                                              [&](absl::string_view field) { return GrpcFieldName(field, prompt_field); }));
      std::lock_guard<std::mutex> lock(ids_mutex_);
      engine_ids_.push_back(id);
    }
    return absl::OkStatus();
  }

  void CancelSubmitted() {
    std::lock_guard<std::mutex> lock(ids_mutex_);
    for (uint64_t id : engine_ids_) ticket_.engine().Cancel(id);
  }

  ServiceContext& context_;
  CallTicket ticket_;
  std::shared_ptr<PromptCallCollector> collector_;
  std::mutex ids_mutex_;
  std::vector<uint64_t> engine_ids_;
};

std::shared_ptr<RequestObserver> PromptCallCollector::ObserverFor(int index, std::vector<int32_t> ids) {
  return std::make_shared<InputObserver>(shared_from_this(), index, std::move(ids));
}

void PromptCallCollector::Done(int index, const FinishInfo& info, const std::vector<int32_t>& ids) {
  context_.metrics->RecordLora(call_.kind, info);
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  if (info.reason != FinishReason::kLength && info.reason != FinishReason::kStop) {
    FinishLocked(ToGrpcStatus(info.status.ok() ? absl::CancelledError("cancelled") : info.status));
    return;
  }
  if (call_.rerank != nullptr) {
    if (!KeepRerankAnswerLocked(index, info)) return;
  } else if (call_.kind == RequestKind::kScore) {
    FillScore(call_.score_response->mutable_results(index), info, ids);
  } else if (info.embedding.empty()) {
    FinishLocked(grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat("inputs[", index, "]: the engine returned no hidden state")));
    return;
  } else {
    FillEmbedding(call_.embed_response->mutable_embeddings(index), info, ids);
  }
  scored_prompt_tokens_ += static_cast<int64_t>(ids.size());
  if (usage_ != nullptr) usage_->AddUsedTokens(static_cast<int64_t>(ids.size()));
  if (--pending_ == 0) {
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    if (call_.kind == RequestKind::kScore) context_.metrics->RecordScore(variant_.variant, scored_prompt_tokens_, seconds);
    if (call_.embed_response != nullptr) call_.embed_response->set_prompt_tokens(static_cast<uint32_t>(scored_prompt_tokens_));
    if (call_.rerank_response != nullptr) FillRerank();
    FinishLocked(grpc::Status::OK);
  }
}

void PromptCallCollector::FillScore(arach::v1::ScoreResult* result, const FinishInfo& info, const std::vector<int32_t>& ids) {
  double total = 0.0;
  for (int32_t id : ids) result->add_token_ids(id);
  for (float lp : info.prompt_logprobs) {
    result->add_logprobs(lp);
    total += lp;
  }
  for (bool greedy : info.prompt_is_greedy) result->add_is_greedy(greedy);
  for (int32_t id : info.prompt_argmax) result->add_argmax_ids(id);
  result->set_total_logprob(total);
  result->set_scored_tokens(static_cast<uint32_t>(info.prompt_logprobs.size()));
  result->set_perplexity(std::exp(-total / std::max<size_t>(1, info.prompt_logprobs.size())));
  if (info.attention) {
    context_.metrics->RecordAttention(variant_.variant, *info.attention);
    // Sampled by --diagnostics_sample_rate but not asked for: recorded, not returned.
    if (call_.diagnostics) FillAttentionDiagnostics(*info.attention, result->mutable_attention());
  }
}

void PromptCallCollector::FillEmbedding(arach::v1::Embedding* embedding, const FinishInfo& info, const std::vector<int32_t>& ids) {
  for (float v : AnsweredEmbedding(info.embedding, call_.dimensions, call_.normalize)) embedding->add_values(v);
  embedding->set_prompt_tokens(static_cast<uint32_t>(ids.size()));
  context_.metrics->RecordEmbedding(variant_.variant, static_cast<int64_t>(ids.size()), info.timings.total_seconds);
  if (info.attention) context_.metrics->RecordAttention(variant_.variant, *info.attention);
}

bool PromptCallCollector::KeepRerankAnswerLocked(int index, const FinishInfo& info) {
  const std::string field = call_.kind == RequestKind::kClassify || index > 0
                                ? absl::StrCat("documents[", call_.kind == RequestKind::kClassify ? index : index - 1, "]")
                                : "query";
  RerankAnswer& answer = rerank_[static_cast<size_t>(index)];
  if (call_.kind == RequestKind::kClassify) {
    if (info.class_logits.empty()) {
      FinishLocked(grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(field, ": the engine returned no class logits")));
      return false;
    }
    answer.score = ClassifierScore(info.class_logits);
    context_.metrics->RecordClassification(variant_.variant, info.usage.prompt_tokens, info.timings.total_seconds);
  } else {
    if (info.embedding.empty()) {
      FinishLocked(grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(field, ": the engine returned no hidden state")));
      return false;
    }
    answer.embedding = info.embedding;
    context_.metrics->RecordEmbedding(variant_.variant, info.usage.prompt_tokens, info.timings.total_seconds);
  }
  if (info.attention) context_.metrics->RecordAttention(variant_.variant, *info.attention);
  return true;
}

void PromptCallCollector::FillRerank() {
  std::vector<double> scores;  // per document
  if (call_.kind == RequestKind::kClassify) {
    for (const RerankAnswer& answer : rerank_) scores.push_back(answer.score);
  } else {
    for (size_t i = 1; i < rerank_.size(); ++i) scores.push_back(CosineSimilarity(rerank_[0].embedding, rerank_[i].embedding));
  }
  const std::optional<int> top_n = call_.rerank->top_n() > 0 ? std::optional<int>(static_cast<int>(call_.rerank->top_n())) : std::nullopt;
  for (const size_t i : RankBestFirst(scores, top_n)) {
    arach::v1::RerankResult* result = call_.rerank_response->add_results();
    result->set_index(static_cast<uint32_t>(i));
    result->set_relevance_score(scores[i]);
  }
  call_.rerank_response->set_prompt_tokens(static_cast<uint32_t>(scored_prompt_tokens_));
}

void PromptCallCollector::FinishNow(const grpc::Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  FinishLocked(status);
}

void PromptCallCollector::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  FinishedRequest record(request_id_, "grpc", call_.rpc(), usage_ != nullptr ? variant_.variant.Name() : "",
                         static_cast<int>(status.error_code()));
  record.key = key_;
  record.lora = variant_.lora;  // (empty where the call never resolved its variant)
  record.prompt_tokens = static_cast<int>(scored_prompt_tokens_);
  record.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  record.finish = status.ok() ? "length" : "error";
  context_.request_log->Write(record);
  if (reactor_ != nullptr) reactor_->Finish(status);
}

}  // namespace

grpc::ServerUnaryReactor* StartRerank(ServiceContext& context, grpc::CallbackServerContext* call,
                                      const arach::v1::RerankRequest* request, arach::v1::RerankResponse* response) {
  PromptCall rerank;
  rerank.kind = RequestKind::kEmbed;  // (kClassify on a cross-encoder: the reactor decides once it has the engine)
  rerank.rerank = request;
  rerank.variant = request->variant();
  rerank.experiment_key = request->experiment_key();
  rerank.request_id = request->request_id();
  if (request->has_priority()) rerank.priority = request->priority();
  rerank.cache_salt = request->cache_salt();
  rerank.rerank_response = response;
  return new PromptCallReactor(context, call, rerank);
}

grpc::ServerUnaryReactor* StartScore(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::ScoreRequest* request, arach::v1::ScoreResponse* response) {
  PromptCall score = PromptCallOf(RequestKind::kScore, *request);
  score.diagnostics = request->diagnostics();
  score.score_response = response;
  return new PromptCallReactor(context, call, score);
}

grpc::ServerUnaryReactor* StartEmbed(ServiceContext& context, grpc::CallbackServerContext* call,
                                     const arach::v1::EmbedRequest* request, arach::v1::EmbedResponse* response) {
  PromptCall embed = PromptCallOf(RequestKind::kEmbed, *request);
  if (request->dimensions() > 0) embed.dimensions = request->dimensions();
  embed.normalize = !request->has_normalize() || request->normalize();
  embed.embed_response = response;
  return new PromptCallReactor(context, call, embed);
}

}  // namespace arach::server
