#include "server/grpc/generate_call.h"

#include <deque>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/admission.h"
#include "server/chat_output/chat_output_parser.h"
#include "server/chat_output/tools.h"
#include "server/json_body.h"
#include "server/reasoning_effort.h"
#include "server/chat_prompt.h"
#include "server/grpc/call_credentials.h"
#include "server/request_log.h"
#include "server/grpc/request_mapping.h"
#include "server/grpc/status_mapping.h"

namespace arach::server {
namespace {

using arach::v1::GenerateResponse;

class GenerateReactor;

// The engine's observer of one call, and the queue between the engine and the reactor. Writes and the final
// Finish are issued under `mutex_` while the reactor is attached: gRPC never runs OnWriteDone or OnDone of
// a write reactor inline, so holding the lock there cannot deadlock, and a detached (done) reactor is never
// touched. It outlives the reactor when the engine still holds it.
class GenerateStream : public RequestObserver {
 public:
  // `usage`: the call's (null when it was refused at the gate); `key`: its API key's name.
  GenerateStream(GenerateReactor* reactor, ServiceContext& context, ResolvedVariant variant, std::string request_id,
                 bool with_logprobs, const char* route, std::shared_ptr<CallUsage> usage, std::string key)
      : reactor_(reactor), context_(context), variant_(std::move(variant)), request_id_(std::move(request_id)),
        with_logprobs_(with_logprobs), route_(route), usage_(std::move(usage)), key_(std::move(key)) {}

  void OnChunk(const StreamChunk& chunk) override {
    std::lock_guard<std::mutex> lock(mutex_);
    GenerateResponse response = ToResponse(chunk, logprobs_ ? &*logprobs_ : nullptr);
    if (chat_output_) SplitChatOutput(chat_output_->Feed(chunk.text), response, /*final=*/false);
    queue_.push_back(std::move(response));
    PumpLocked();
  }
  void OnFinish(const FinishInfo& info) override;

  void OnWriteDone() {
    std::lock_guard<std::mutex> lock(mutex_);
    writing_ = false;
    PumpLocked();
  }
  // Ends the call right away with `status` (nothing was submitted).
  void Refuse(const absl::Status& status) {
    LogFinished(status.code(), nullptr);
    std::lock_guard<std::mutex> lock(mutex_);
    final_status_ = ToGrpcStatus(status);
    queue_.clear();
    PumpLocked();
  }
  void Detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    reactor_ = nullptr;
  }
  // A Chat call that asked for it: the rendered prompt goes in the final message (set before submission).
  void SetChatPrompt(std::string prompt) { chat_prompt_ = std::move(prompt); }
  // Before submission, when the call asked for log-probs: each token's text follows the prompt's last ids.
  void StartLogprobs(const Tokenizer& tokenizer, std::span<const int32_t> prompt) {
    if (with_logprobs_) logprobs_.emplace(tokenizer, prompt);
  }
  // Before submission, a Chat call on a model whose turns hold reasoning or tool calls: they leave `text`.
  void StartChatOutput(const ChatOutputFormat& format, const ChatTurnPlan& plan) {
    if (plan.parse_tools || format.reasoning) chat_output_.emplace(format, plan.parse_tools, plan.turn_start);
  }

 private:
  void PumpLocked();
  // `delta`'s content as the message's text, its reasoning and tool calls in their own fields: a call goes in the
  // message that completes it (its pieces gathered in open_call_), or in the last one (`final`) when cut off.
  void SplitChatOutput(ChatOutputDelta delta, GenerateResponse& response, bool final) {
    response.set_text(std::move(delta.content));
    response.set_reasoning_text(std::move(delta.reasoning));
    for (ToolCallPiece& piece : delta.tool_calls) {
      if (!piece.name.empty()) {
        open_call_.emplace();
        open_call_->set_id(NewToolCallId(chat_output_->format().tools));
        open_call_->set_name(std::move(piece.name));
        open_call_->set_index(static_cast<uint32_t>(piece.index));
        tool_calls_ = piece.index + 1;
      }
      if (!open_call_) continue;  // (a piece always follows its call's first)
      open_call_->mutable_arguments_json()->append(piece.arguments);
      if (piece.ends) {
        *response.add_tool_calls() = std::move(*open_call_);
        open_call_.reset();
      }
    }
    if (final && open_call_) {
      *response.add_tool_calls() = std::move(*open_call_);
      open_call_.reset();
    }
  }
  // The request's line in the server's log (`info`: null when it was refused).
  void LogFinished(absl::StatusCode code, const FinishInfo* info) {
    FinishedRequest record(request_id_, "grpc", route_, info ? variant_.variant.Name() : "", static_cast<int>(code));
    record.key = key_;
    if (info != nullptr) record.lora = variant_.lora;
    if (info != nullptr) {
      record.prompt_tokens = info->usage.prompt_tokens;
      record.completion_tokens = info->usage.completion_tokens;
      record.seconds = info->timings.total_seconds;
      record.finish = FinishReasonName(info->reason);
    }
    context_.request_log->Write(record);
  }

  std::mutex mutex_;
  GenerateReactor* reactor_;  // null once the call is done
  ServiceContext& context_;
  ResolvedVariant variant_;
  std::string request_id_;
  bool with_logprobs_;
  const char* route_;  // "Generate" or "Chat"
  std::shared_ptr<CallUsage> usage_;
  std::string key_;
  std::string chat_prompt_;
  std::optional<PieceDecoder> logprobs_;  // when the call asked for log-probs
  std::optional<ChatOutputParser> chat_output_;  // a Chat call whose reasoning or tool calls are read out
  int tool_calls_ = 0;                             // calls the turn has made
  std::optional<arach::v1::ToolCall> open_call_;  // a call whose pieces are still coming
  std::deque<GenerateResponse> queue_;
  GenerateResponse current_;  // the message being written (owned here until OnWriteDone)
  std::optional<grpc::Status> final_status_;
  bool writing_ = false;
  bool finished_ = false;
};

class GenerateReactor : public grpc::ServerWriteReactor<GenerateResponse> {
 public:
  // `chat` set: a Chat call (its generation fields are `request`), whose prompt the chat template renders.
  GenerateReactor(ServiceContext& context, grpc::CallbackServerContext* call, const arach::v1::GenerateRequest* request,
                  const arach::v1::ChatRequest* chat)
      : context_(context) {
    const bool with_logprobs = request->logprobs() || request->top_logprobs() > 0;
    const absl::StatusOr<std::string> chosen_id = ChosenRequestId(request->request_id());
    const std::string request_id = chosen_id.ok() ? *chosen_id : NewRequestId();  // a refused id is not logged
    const char* route = chat != nullptr ? "Chat" : "Generate";
    absl::StatusOr<CallTicket> ticket = AdmitCall(context, AuthorizationOf(*call));
    if (!ticket.ok()) {
      stream_ = std::make_shared<GenerateStream>(this, context, ResolvedVariant{}, request_id, with_logprobs, route, nullptr,
                                                 "unknown");
      stream_->Refuse(ticket.status());
      return;
    }
    ticket_ = std::move(*ticket);
    const std::string& key = ticket_.caller().key;
    absl::StatusOr<ResolvedVariant> resolved =
        ResolveVariant(context, ticket_, ToRequestedVariant(request->variant(), request->experiment_key()), "variant");
    stream_ = std::make_shared<GenerateStream>(this, context, resolved.ok() ? *resolved : ResolvedVariant{}, request_id,
                                               with_logprobs, route, ticket_.usage(), key);
    absl::Status status = chosen_id.ok() ? resolved.status() : chosen_id.status();
    if (status.ok()) status = chat != nullptr ? SubmitChat(call, *chat, *resolved) : Submit(call, *request, *resolved);
    if (!status.ok()) {
      RecordRejection(context, status, key);
      stream_->Refuse(status);
    }
  }

  void OnWriteDone(bool ok) override {
    if (!ok) CancelEngineRequest();  // the client is gone; the engine's finish ends the call
    stream_->OnWriteDone();
  }
  void OnCancel() override { CancelEngineRequest(); }
  void OnDone() override {
    stream_->Detach();
    ticket_.Release();
    delete this;
  }

 private:
  // Renders the conversation, maps the generation fields with the prompt's token ids filled in, plans the turn
  // (tool calls, reasoning) on the mapped structured output, and submits; errors name "messages" for the prompt
  // and "generation.<field>" for the rest.
  absl::Status SubmitChat(grpc::CallbackServerContext* call, const arach::v1::ChatRequest& chat, const ResolvedVariant& variant) {
    if (chat.generation().prompt_case() != arach::v1::GenerateRequest::PROMPT_NOT_SET || !chat.generation().suffix().empty()) {
      return absl::InvalidArgumentError("generation: leave its prompt and suffix unset in Chat (the messages are the prompt)");
    }
    ARACH_ASSIGN_OR_RETURN(ChatInput input, ToChatInput(chat));
    ARACH_ASSIGN_OR_RETURN(const std::vector<ToolSpec> tools, ParseTools(input.tools, "tools_json"));
    nlohmann::json tool_choice;
    if (!chat.tool_choice_json().empty()) {
      ARACH_ASSIGN_OR_RETURN(tool_choice, ParseJson(chat.tool_choice_json(), "tool_choice_json"));
    }
    ARACH_ASSIGN_OR_RETURN(const ToolChoice choice, ParseToolChoice(tool_choice, tools, "tool_choice_json"));
    input.tools = ToolsForPrompt(std::move(input.tools), choice, context_.exclude_tools_when_tool_choice_none);
    Engine& engine = ticket_.engine();
    std::shared_ptr<const ChatTemplate> own_template;
    if (!chat.chat_template().empty()) {
      ARACH_ASSIGN_OR_RETURN(own_template, ParseRequestChatTemplate(chat.chat_template(), context_.trust_request_chat_template, engine,
                                                                    "chat_template"));
    }
    if (!chat.reasoning_effort().empty()) {
      ARACH_ASSIGN_OR_RETURN(const std::optional<std::string> effort,
                             ReadReasoningEffort(nlohmann::json(chat.reasoning_effort()), "reasoning_effort"));
      if (const ChatTemplate* chat_template = ChatTemplateFor(engine, own_template.get()); chat_template != nullptr) {
        ARACH_RETURN_IF_ERROR(ApplyReasoningEffort(*effort, *chat_template, input, "reasoning_effort"));  // (else rendering says so)
      }
    }
    ARACH_ASSIGN_OR_RETURN(ChatPrompt prompt, RenderChatPrompt(engine, context_.limits, input, "messages", own_template.get()));
    arach::v1::GenerateRequest generation = chat.generation();
    if (!generation.has_max_tokens()) {
      generation.set_max_tokens(static_cast<uint32_t>(DefaultChatMaxTokens(context_.limits, engine, ticket_.caller().limits, prompt.ids.size(), /*choices=*/1)));
    }
    for (int32_t id : prompt.ids) generation.mutable_token_ids()->add_ids(id);
    if (!generation.ignore_eos() && prompt.end_of_turn) generation.add_stop_token_ids(*prompt.end_of_turn);
    ARACH_ASSIGN_OR_RETURN(EngineRequest engine_request, Map(generation, variant, /*chat=*/true));
    ARACH_ASSIGN_OR_RETURN(const ChatTurnPlan plan,
                           PlanChatTurn(context_.chat_output, tools, choice, !chat.has_parallel_tool_calls() || chat.parallel_tool_calls(),
                                        prompt.text, prompt.continued, engine_request.constraint, engine.tokenizer(), "tools_json",
                                        "tool_choice_json"));
    ARACH_RETURN_IF_ERROR(CheckJoinedContent(plan, engine, engine_request.constraint, "generation.structured_output"));
    stream_->StartChatOutput(context_.chat_output, plan);
    const bool tool_calls = plan.constraint.active();  // the constraint comes from the tools' schemas
    if (tool_calls) engine_request.constraint = plan.constraint;  // (it holds the structured_output's format where one is asked)
    if (plan.keep_special_tokens) engine_request.sampling.skip_special_tokens = false;
    if (!plan.banned_call_marker.empty()) engine_request.sampling.bad_words.push_back(plan.banned_call_marker);
    if (chat.return_prompt()) stream_->SetChatPrompt(prompt.text);
    return SubmitMapped(call, std::move(engine_request), [tool_calls](absl::string_view field) {
      if (field == "constraint" && tool_calls) return std::string("tools_json");
      if (field == "prompt") return std::string("messages");
      return absl::StrCat("generation.", GrpcFieldName(field, "messages"));
    });
  }

  absl::Status Submit(grpc::CallbackServerContext* call, const arach::v1::GenerateRequest& request, const ResolvedVariant& variant) {
    std::string prompt_field;
    ARACH_ASSIGN_OR_RETURN(EngineRequest engine_request, Map(request, variant, /*chat=*/false, &prompt_field));
    return SubmitMapped(call, std::move(engine_request),
                        [prompt_field](absl::string_view field) { return GrpcFieldName(field, prompt_field); });
  }

  // `request` as an engine request with the caller's priority; a Chat call's errors name "generation.<field>".
  // `prompt_field`: which of the request's prompt fields it used.
  absl::StatusOr<EngineRequest> Map(const arach::v1::GenerateRequest& request, const ResolvedVariant& variant, bool chat,
                                    std::string* prompt_field = nullptr) {
    std::string field;
    absl::StatusOr<EngineRequest> mapped = ToEngineRequest(ticket_.engine(), context_.limits, request, variant.variant, &field);
    if (!mapped.ok()) return chat ? absl::InvalidArgumentError(absl::StrCat("generation.", mapped.status().message())) : mapped.status();
    mapped->priority = ticket_.PriorityFor(request.has_priority() ? std::optional<int>(request.priority()) : std::nullopt);
    mapped->cache_salt = ticket_.CacheSaltFor(request.cache_salt());
    mapped->lora = variant.lora;
    if (prompt_field != nullptr) *prompt_field = field;
    return mapped;
  }

  // Reserves the request's tokens, applies the server's policy and submits; `field_name` names an engine field in
  // the caller's terms.
  absl::Status SubmitMapped(grpc::CallbackServerContext* call, EngineRequest engine_request, FieldNames field_name) {
    Engine& engine = ticket_.engine();
    ARACH_RETURN_IF_ERROR(ticket_.ReserveTokens(static_cast<int64_t>(engine_request.prompt.size()) + engine_request.sampling.max_tokens,
                                                field_name("max_tokens")));
    context_.policy->Apply(engine_request);
    stream_->StartLogprobs(engine.tokenizer(), engine_request.prompt);
    if (call->deadline() != std::chrono::system_clock::time_point::max()) {
      engine_request.deadline = Clock::now() + (call->deadline() - std::chrono::system_clock::now());
    }
    ARACH_ASSIGN_OR_RETURN(engine_id_, engine.Submit(std::move(engine_request), stream_, field_name));
    submitted_ = true;
    return absl::OkStatus();
  }

  void CancelEngineRequest() {
    if (submitted_) ticket_.engine().Cancel(engine_id_);
  }

  ServiceContext& context_;
  CallTicket ticket_;
  std::shared_ptr<GenerateStream> stream_;
  uint64_t engine_id_ = 0;
  bool submitted_ = false;
};

void GenerateStream::OnFinish(const FinishInfo& info) {
  context_.metrics->RecordGenerate(variant_.variant, info, key_);
  context_.metrics->RecordLora(RequestKind::kGenerate, info);
  if (usage_ != nullptr) usage_->AddUsedTokens(info.usage.prompt_tokens + info.usage.completion_tokens);
  if (info.generated) context_.shadow->OnFinished(*context_.engine.load(), variant_.variant, info);
  LogFinished(info.reason == FinishReason::kStop || info.reason == FinishReason::kLength
                  ? absl::StatusCode::kOk
                  : (info.status.ok() ? absl::StatusCode::kCancelled : info.status.code()),
              &info);
  std::lock_guard<std::mutex> lock(mutex_);
  if (info.reason == FinishReason::kStop || info.reason == FinishReason::kLength) {
    GenerateResponse last;
    last.set_text(info.text);
    if (chat_output_) {
      ChatOutputDelta delta = chat_output_->Feed(info.text);
      AppendDelta(delta, chat_output_->Finish());
      SplitChatOutput(std::move(delta), last, /*final=*/true);
    }
    FillFinish(info, variant_, request_id_, last.mutable_finish());
    if (tool_calls_ > 0 && info.reason == FinishReason::kStop) last.mutable_finish()->set_reason(arach::v1::FINISH_REASON_TOOL_CALLS);
    last.mutable_finish()->set_chat_prompt(chat_prompt_);
    queue_.push_back(std::move(last));
    final_status_ = grpc::Status::OK;
  } else {  // cancelled, deadline, error: the status says it; pending messages are dropped
    final_status_ = ToGrpcStatus(info.status.ok() ? absl::CancelledError("cancelled") : info.status);
    queue_.clear();
  }
  PumpLocked();
}

void GenerateStream::PumpLocked() {
  if (reactor_ == nullptr || writing_ || finished_) return;
  if (!queue_.empty()) {
    current_ = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    reactor_->StartWrite(&current_);
  } else if (final_status_) {
    finished_ = true;
    reactor_->Finish(*final_status_);
  }
}

}  // namespace

grpc::ServerWriteReactor<arach::v1::GenerateResponse>* StartGenerate(ServiceContext& context,
                                                                     grpc::CallbackServerContext* call,
                                                                     const arach::v1::GenerateRequest* request) {
  return new GenerateReactor(context, call, request, nullptr);
}

grpc::ServerWriteReactor<arach::v1::GenerateResponse>* StartChat(ServiceContext& context, grpc::CallbackServerContext* call,
                                                                 const arach::v1::ChatRequest* request) {
  return new GenerateReactor(context, call, &request->generation(), request);
}

}  // namespace arach::server
