#include "server/http/responses.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/core/field_error.h"
#include "server/http/chat_turn_call.h"
#include "server/http/http_call.h"
#include "server/http/input_items.h"
#include "server/http/openai_error.h"
#include "server/http/response_output.h"
#include "server/http/response_retrieval.h"
#include "server/http/responses_request.h"
#include "server/http/token_logprobs.h"
#include "server/response_store.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// "resp_", and in a fleet the replica's name and "_": the id tells a router which replica holds the response.
std::string ResponseIdPrefix(const ServiceContext& context) {
  return context.replica_name.empty() ? "resp_" : absl::StrCat("resp_", context.replica_name, "_");
}

class ResponsesCall : public ChatTurnCall {
 public:
  // `store`: where the answer is kept (null: not kept). `background`: where it runs when it runs in the background
  // (null: it is answered when it has finished).
  ResponsesCall(ServiceContext& context, CallTicket ticket, ResponsesRequest request, ResolvedVariant variant, const CallOrigin& origin,
                ResponseStore* store, BackgroundResponses* background)
      : ChatTurnCall(context, std::move(ticket), std::move(request.chat), std::move(variant),
                     {origin.request_id, "/v1/responses", ResponseIdPrefix(context), origin.answer_deadline}, "input"),
        echo_(std::move(request.echo)),
        conversation_(std::move(request.conversation)),
        input_start_(request.input_start),
        store_(store),
        background_(background),
        output_(origin.request_id, context.chat_output.tools),
        owner_(caller().key) {}

  // A background response: stored as queued, and a thread of `background_` waits for its end. Answered at once: as
  // queued, or (streamed) with its events, read from its EventLog as the thread records them.
  bool AnsweredInBackground(httplib::Response& response) override;

 protected:
  std::string ObjectName() const override { return "response"; }
  // The choice's output items (the answer has one choice).
  json ChoiceJson(int index, Choice& choice, bool final) override;
  std::string ParameterName(absl::string_view engine_field) const override {
    if (engine_field == "max_tokens") return "max_output_tokens";
    if (engine_field == "top_logprobs") return "top_logprobs";
    return OpenAiFieldName(engine_field);
  }
  json WholeAnswer() override { return Kept(ResponseJson(ChoiceJson(0, choices()[0], true))); }
  bool StreamOpened(ServerSentEvents& events) override;
  bool StreamChoice(ServerSentEvents& events, int index, Choice& choice, bool finished) override;
  bool StreamEnded(ServerSentEvents& events) override;
  bool StreamFailed(ServerSentEvents& events, const absl::Status& failure) override;

 private:
  // The events of what `choice` has said since it was last read (and, `finished`, of its end).
  std::vector<json> Read(int index, Choice& choice, bool finished);
  bool cut_off() const { return choices()[0].finish && choices()[0].finish->reason == FinishReason::kLength; }
  // The response object: in progress (no output yet), else finished with `output`.
  json ResponseJson(std::optional<json> output) const;
  // The finished `response`, kept in the store when the answer is stored.
  json Kept(json response);
  // A response without its output yet (queued, in progress) or without an answer (cancelled, failed), kept with the
  // conversation it answers.
  void KeepUnanswered(const json& response);
  // Stores `response` for its key with `conversation` (what a response continuing it answers after) and this
  // request's own input items.
  void Keep(const json& response, nlohmann::ordered_json conversation);
  // On its background thread: waits for the answer (streamed: records its events) and keeps the response's final state.
  void FinishInBackground();
  // A background response before the engine has begun it.
  json QueuedResponse() const;
  // The response as it ended without an answer: `cancelled`, or `failed` with the error.
  json EndedResponse(const absl::Status& failure) const;
  // A streamed background response's `response.in_progress` event, once the engine has begun it (and its state
  // kept so): whether it was sent.
  bool SendInProgress(ServerSentEvents& events);
  std::string response_id() const { return absl::StrCat(identity().id_prefix, identity().request_id); }
  json ResponseUsage() const;
  bool Send(ServerSentEvents& events, json event);

  json echo_;
  nlohmann::ordered_json conversation_;  // the input items answered (ResponsesRequest::conversation)
  size_t input_start_;                   // where this request's own input begins in conversation_
  ResponseStore* store_;
  BackgroundResponses* background_;
  ResponseOutput output_;
  const std::string owner_;  // the key whose response it is (kept apart: the call's ticket ends before its last state is kept)
  std::optional<ContentLogprobs> content_logprobs_;  // include message.output_text.logprobs: the message's tokens
  // A streamed background response's events (null otherwise): event i has sequence_number i, which starting_after
  // counts in.
  std::shared_ptr<EventLog> events_;
  bool in_progress_sent_ = false;
  int sequence_number_ = 0;
};

std::vector<json> ResponsesCall::Read(int index, Choice& choice, bool finished) {
  if (fields().logprobs && !content_logprobs_) {  // (the prompt is rendered by now)
    content_logprobs_.emplace(engine().tokenizer(), prompt().ids, text_skips_special_tokens());
  }
  if (content_logprobs_) {
    for (const SampledToken& token : choice.tokens) {
      if (absl::Status status = content_logprobs_->Add(token); !status.ok()) Fail(status);
    }
  }
  choice.tokens.clear();
  const ChatOutputDelta delta = TakeDelta(index, choice, finished);
  std::vector<json> events = output_.Add(delta, content_logprobs_ ? content_logprobs_->Take(delta.content_from) : json::array());
  if (finished) {
    for (json& event : output_.Finish(cut_off())) events.push_back(std::move(event));
  }
  return events;
}

json ResponsesCall::ChoiceJson(int index, Choice& choice, bool final) {
  Read(index, choice, final);
  return output_.items();
}

json ResponsesCall::ResponseUsage() const {
  const json chat = UsageJson();
  int reasoning_tokens = 0;
  if (!output_.reasoning().empty()) {  // the reasoning text as the tokenizer encodes it
    absl::StatusOr<std::vector<int32_t>> ids = engine().tokenizer().Encode(output_.reasoning(), /*add_special_tokens=*/false);
    if (ids.ok()) reasoning_tokens = static_cast<int>(ids->size());
  }
  return {{"input_tokens", chat["prompt_tokens"]},
          {"input_tokens_details", {{"cached_tokens", chat["prompt_tokens_details"]["cached_tokens"]}}},
          {"output_tokens", chat["completion_tokens"]},
          {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
          {"total_tokens", chat["total_tokens"]}};
}

json ResponsesCall::ResponseJson(std::optional<json> output) const {
  const bool finished = output.has_value();
  const bool incomplete = finished && cut_off();
  json response = {{"id", response_id()},
                   {"object", "response"},
                   {"created_at", created()},
                   {"status", !finished ? "in_progress" : incomplete ? "incomplete" : "completed"},
                   {"background", background_ != nullptr},
                   {"error", nullptr},
                   {"incomplete_details", incomplete ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
                   {"model", fields().model},
                   {"output", finished ? std::move(*output) : json::array()},
                   {"previous_response_id", nullptr},
                   {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
                   {"service_tier", "default"},
                   {"store", store_ != nullptr},
                   {"usage", finished ? ResponseUsage() : json(nullptr)},
                   {"arach_variant", variant_name()}};
  response.update(echo_);
  if (finished) {
    if (std::optional<json> attention = AttentionJsonOf(choices()[0])) response["arach_attention"] = std::move(*attention);
  }
  return response;
}

json ResponsesCall::Kept(json response) {
  if (store_ != nullptr) {
    nlohmann::ordered_json conversation = conversation_;  // what a response continuing this one answers after
    for (const json& item : response["output"]) conversation.push_back(nlohmann::ordered_json::parse(item.dump()));
    // A reasoning cut off by max_output_tokens said nothing yet: the next turn follows the user's words instead.
    while (!conversation.empty() && conversation.back().value("type", "") == "reasoning") conversation.erase(conversation.end() - 1);
    Keep(response, std::move(conversation));
  }
  return response;
}

void ResponsesCall::KeepUnanswered(const json& response) { Keep(response, conversation_); }

void ResponsesCall::Keep(const json& response, nlohmann::ordered_json conversation) {
  const nlohmann::ordered_json input(conversation_.begin() + static_cast<std::ptrdiff_t>(input_start_), conversation_.end());
  const std::string status = response.value("status", "");
  store_->Put(response_id(), {owner_, response, std::move(conversation), ListedInputItems(input, identity().request_id), events_,
                              /*events_dropped=*/false, /*running=*/status == "queued" || status == "in_progress"});
}

bool ResponsesCall::AnsweredInBackground(httplib::Response& response) {
  if (background_ == nullptr) return false;
  const json queued = QueuedResponse();
  if (streaming()) events_ = std::make_shared<EventLog>();
  auto self = std::static_pointer_cast<ResponsesCall>(shared_from_this());
  if (absl::Status started = background_->Start(
          response_id(), owner_, self, [&] { KeepUnanswered(queued); }, [self] { self->FinishInBackground(); });
      !started.ok()) {
    Cancel();
    (void)FinishUnattended([] {});  // (ends the call: its log line, its admission)
    SendError(response, started);
    return true;
  }
  if (events_) {
    response.status = 200;
    ReplayServerSentEvents(response, events_, 0);  // (a client that goes away leaves it running)
  } else {
    SendJson(response, 200, queued);
  }
  return true;
}

void ResponsesCall::FinishInBackground() {
  if (events_) {
    ServerSentEvents events(*events_);
    (void)StreamUnattended(events);  // (StreamEnded or StreamFailed kept its final state)
    events_->Close();                // (closed by the stream's end already; whatever happened, its readers end)
    return;
  }
  const absl::StatusOr<json> answer = FinishUnattended([this] { KeepUnanswered(ResponseJson(std::nullopt)); });
  if (answer.ok()) return;  // (WholeAnswer kept it)
  KeepUnanswered(EndedResponse(answer.status()));
}

json ResponsesCall::QueuedResponse() const {
  json queued = ResponseJson(std::nullopt);
  queued["status"] = "queued";
  return queued;
}

json ResponsesCall::EndedResponse(const absl::Status& failure) const {
  json ended = ResponseJson(std::nullopt);
  if (absl::IsCancelled(failure)) {
    ended["status"] = "cancelled";
  } else {
    const json error = ErrorBody(failure)["error"];
    ended["status"] = "failed";
    ended["error"] = {{"code", error["code"]}, {"message", error["message"]}};
  }
  return ended;
}

bool ResponsesCall::Send(ServerSentEvents& events, json event) {
  event["sequence_number"] = sequence_number_++;
  const std::string type = event["type"].get<std::string>();
  return events.Event(type, JsonText(event));
}

bool ResponsesCall::StreamOpened(ServerSentEvents& events) {
  if (events_) {  // a background response is queued until the engine begins it (SendInProgress)
    return Send(events, {{"type", "response.created"}, {"response", QueuedResponse()}}) &&
           Send(events, {{"type", "response.queued"}, {"response", QueuedResponse()}});
  }
  return Send(events, {{"type", "response.created"}, {"response", ResponseJson(std::nullopt)}}) &&
         Send(events, {{"type", "response.in_progress"}, {"response", ResponseJson(std::nullopt)}});
}

bool ResponsesCall::SendInProgress(ServerSentEvents& events) {
  if (!events_ || in_progress_sent_) return true;
  in_progress_sent_ = true;
  const json in_progress = ResponseJson(std::nullopt);
  KeepUnanswered(in_progress);
  return Send(events, {{"type", "response.in_progress"}, {"response", in_progress}});
}

bool ResponsesCall::StreamChoice(ServerSentEvents& events, int index, Choice& choice, bool finished) {
  if (!SendInProgress(events)) return false;
  for (json& event : Read(index, choice, finished)) {
    if (!Send(events, std::move(event))) return false;
  }
  choice.opened = true;
  return true;
}

bool ResponsesCall::StreamEnded(ServerSentEvents& events) {
  const json response = ResponseJson(output_.items());
  const std::string type = response["status"] == "incomplete" ? "response.incomplete" : "response.completed";
  const bool sent = Send(events, {{"type", type}, {"response", response}});
  Kept(response);  // (after its last event, before the end: a reader that sees the stream end finds it stored)
  return sent && events.End();
}

bool ResponsesCall::StreamFailed(ServerSentEvents& events, const absl::Status& failure) {
  if (events_) {  // a background response ends as it is kept: cancelled, or failed with its error
    const json ended = EndedResponse(failure);
    Send(events, {{"type", absl::IsCancelled(failure) ? "response.cancelled" : "response.failed"}, {"response", ended}});
    KeepUnanswered(ended);
    return events.End();
  }
  const json error = ErrorBody(failure)["error"];
  Send(events, {{"type", "error"}, {"code", error["code"]}, {"message", error["message"]}, {"param", error["param"]}});
  return events.End();
}

}  // namespace

StoredConversation StoredConversationOf(ResponseStore* store, const std::string& owner) {
  if (store == nullptr) return nullptr;
  return [store, owner](const std::string& id) -> absl::StatusOr<nlohmann::ordered_json> {
    std::optional<ResponseStore::Entry> entry = store->Get(id, owner);
    if (!entry) return absl::NotFoundError(id);
    // A background response continues once answered: one running, cancelled or failed has no answer.
    const std::string status = entry->response.value("status", "");
    if (status != "completed" && status != "incomplete") {
      return InvalidField("previous_response_id",
                          absl::StrCat("'", ClipForError(id, 80), "' is ", status, ": only an answered response is continued"));
    }
    return std::move(entry->conversation);
  };
}

void HandleResponses(ServiceContext& context, BackgroundResponses& background, const httplib::Request& request,
                     httplib::Response& response, const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/responses",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ResponseStore* const store = context.responses;
                    const std::string owner = ticket.caller().key;
                    ARACH_ASSIGN_OR_RETURN(ResponsesRequest parsed,
                                           ParseResponsesRequest(request.body, StoredConversationOf(store, owner)));
                    if (parsed.background && store == nullptr) {
                      return InvalidField("background", "needs a server that stores responses (--responses_store_bytes is 0)");
                    }
                    if (const std::string id = ResponseIdPrefix(context) + origin.request_id;
                        parsed.background && background.IsRunning(id, owner)) {
                      return BackgroundResponses::DuplicateError(id);  // (Start checks again, for two at once)
                    }
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.chat.fields));
                    SetVariantHeaders(response, variant);
                    ResponseStore* const keep_in = parsed.store ? store : nullptr;
                    CallOrigin call_origin = origin;
                    if (parsed.background) call_origin.answer_deadline.reset();  // (nobody waits for a background answer)
                    BackgroundResponses* const runs_in = parsed.background ? &background : nullptr;
                    auto call = std::make_shared<ResponsesCall>(context, std::move(ticket), std::move(parsed), std::move(variant),
                                                                call_origin, keep_in, runs_in);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

void ServeStoredResponse(ServiceContext& context, BackgroundResponses* background, const httplib::Request& request,
                         httplib::Response& response, StoredResponseAction action) {
  absl::StatusOr<Caller> caller = Authenticate(*context.keys, request.get_header_value("Authorization"));
  if (!caller.ok()) return SendError(response, caller.status());
  const std::string id = request.matches[1].str();
  ResponseRetrieval retrieval;
  if (action == StoredResponseAction::kRetrieve) {
    absl::StatusOr<ResponseRetrieval> parsed = ParseResponseRetrieval(request.params);
    if (!parsed.ok()) return SendError(response, parsed.status());
    retrieval = *parsed;
  }
  // A running background response is cancelled (or, to be deleted, cancelled first: it would store itself again)
  // whether or not the store still holds it: its final state is stored before this returns.
  if ((action == StoredResponseAction::kCancel || action == StoredResponseAction::kDelete) && background != nullptr) {
    background->CancelAndWait(id, caller->key);
  }
  std::optional<ResponseStore::Entry> entry;
  if (context.responses != nullptr) entry = context.responses->Get(id, caller->key);
  if (!entry) {
    return SendError(response, absl::NotFoundError(absl::StrCat(
                                   "response '", ClipForError(id, 80), "' is not stored here",
                                   context.responses == nullptr ? ": /v1/responses keeps nothing (its answers say store: false)"
                                                                : " (for this key: the oldest are dropped for room)")));
  }
  switch (action) {
    case StoredResponseAction::kRetrieve:
      if (!retrieval.stream) return SendJson(response, 200, entry->response);
      if (!entry->events) {
        const char* const why = entry->events_dropped
                                    ? "no longer keeps its events: they were left out for room (--responses_store_bytes)"
                                    : "was not created with background and stream: only those are streamed again";
        return SendError(response, InvalidField("stream", absl::StrCat("response '", ClipForError(id, 80), "' ", why)));
      }
      response.status = 200;
      return ReplayServerSentEvents(response, entry->events, retrieval.first_event);
    case StoredResponseAction::kDelete:
      context.responses->Delete(id, caller->key);
      return SendJson(response, 200, {{"id", id}, {"object", "response"}, {"deleted", true}});
    case StoredResponseAction::kListInputItems: {
      absl::StatusOr<json> page = InputItemsPage(entry->input_items, request);
      return page.ok() ? SendJson(response, 200, *page) : SendError(response, page.status());
    }
    case StoredResponseAction::kCancel:
      // A running one has ended cancelled (above); a finished one is answered as it ended (a cancel is idempotent).
      if (entry->response.value("background", false) != true) {
        return SendError(response, absl::InvalidArgumentError("only background responses can be cancelled"));
      }
      return SendJson(response, 200, entry->response);
  }
}

}  // namespace arach::server::http
