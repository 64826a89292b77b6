#include "server/http/generation_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/http/http_call.h"
#include "server/http/openai_error.h"
#include "server/http/token_logprobs.h"
#include "server/request_limits.h"
#include "server/request_log.h"

namespace arach::server::http {

using json = nlohmann::json;

bool Answered(const FinishInfo& info) { return info.reason == FinishReason::kStop || info.reason == FinishReason::kLength; }

json StopReasonJson(const FinishInfo& info) {
  if (info.reason != FinishReason::kStop) return nullptr;
  if (!info.stop_string.empty()) return info.stop_string;
  if (info.stop_token_id) return *info.stop_token_id;
  return nullptr;
}

namespace {

// [layers][heads] as nested arrays (the layout of refs/sink_refs.json).
json LayerHeadTable(const std::vector<float>& values, int num_layers, int num_heads) {
  json table = json::array();
  for (int l = 0; l < num_layers; ++l) {
    const auto first = values.begin() + static_cast<ptrdiff_t>(l) * num_heads;
    table.push_back(json(std::vector<float>(first, first + num_heads)));
  }
  return table;
}

json AttentionJson(const AttentionDiagnostics& a) {
  json out = {{"sink_mass", LayerHeadTable(a.sink_mass, a.num_layers, a.num_heads)},
              {"hub_mass", LayerHeadTable(a.hub_mass, a.num_layers, a.num_heads)},
              {"mean_sink_mass", a.MeanSinkMass()}};
  if (a.has_hub_rows()) {
    out["hub_rows_sink_mass"] = LayerHeadTable(a.hub_rows_sink_mass, a.num_layers, a.num_heads);
    out["hub_rows_hub_mass"] = LayerHeadTable(a.hub_rows_hub_mass, a.num_layers, a.num_heads);
  }
  return out;
}

// Whether a streamed choice chunk carries nothing for the client: no text or delta (a chat delta whose tokens went
// into a tool call not yet closed, or text held back while it may become a stop string), no log-probs, no finish.
bool SaysNothing(const json& choice) {
  const auto set = [&](const char* key) {
    const auto it = choice.find(key);
    return it != choice.end() && !it->is_null();
  };
  if (set("logprobs") || set("finish_reason") || set("arach_attention") || set("prompt_token_ids")) return false;
  if (const auto ids = choice.find("token_ids"); ids != choice.end() && !ids->empty()) return false;
  if (const auto delta = choice.find("delta"); delta != choice.end()) return delta->empty();
  return choice.value("text", "").empty();
}

// The status an unattended call's record ends with: a cancelled one was cancelled by its client, logged as a client
// that went away is.
int UnattendedHttpStatus(const absl::Status& ended) {
  return ended.ok() ? 200 : absl::IsCancelled(ended) ? kClientClosedRequest : HttpStatusOf(ended);
}

}  // namespace

GenerationCall::GenerationCall(ServiceContext& context, CallTicket ticket, GenerationFields fields, ResolvedVariant variant,
                               Identity identity)
    : context_(context), ticket_(std::move(ticket)), fields_(std::move(fields)), variant_(std::move(variant)),
      identity_(std::move(identity)), created_(UnixSeconds()), started_(Clock::now()) {}

absl::Status GenerationCall::Submit(std::vector<EngineRequest> requests, const std::vector<std::string>& prompt_fields,
                                    const std::string& own_constraint_field) {
  if (fields_.diagnostics) ARACH_RETURN_IF_ERROR(RequireScope(ticket_.caller(), kScopeDiagnostics, "diagnostics"));
  std::vector<int32_t> prediction;  // the predicted text's tokens, once for every choice
  if (fields_.prediction) {
    ARACH_ASSIGN_OR_RETURN(prediction, EncodePrediction(engine(), *fields_.prediction));
  }
  int64_t tokens = 0;  // what the call may use, as its usage counts it: each prompt once, every choice's max_tokens
  for (size_t c = 0; c < requests.size(); ++c) {
    EngineRequest& r = requests[c];
    r.lora = variant_.lora;  // the adapter the model id named
    if (fields_.prompt_logprobs) {  // vLLM's prompt_logprobs (PutPromptLogprobs); echo may ask for more alternatives
      r.sampling.prompt_logprobs = true;
      r.prompt_top_logprobs = std::max(r.prompt_top_logprobs, *fields_.prompt_logprobs);
    }
    if (!LeadsItsPrompt(c) && !fields_.stream) {  // its PromptLead scores the prompt; this one may reuse its cached blocks
      r.sampling.prompt_logprobs = false;
      r.prompt_top_logprobs = 0;
    }
    if (CopiesItsLead(c, r)) continue;  // its lead computes its answer: no tokens of its own
    r.prediction = prediction;
    r.priority = ticket_.PriorityFor(fields_.priority);
    r.cache_salt = ticket_.CacheSaltFor(fields_.cache_salt);
    if (!fields_.stream && identity_.answer_deadline) r.deadline = identity_.answer_deadline;
    tokens += (LeadsItsPrompt(c) ? static_cast<int64_t>(r.prompt.size()) : 0) + (r.kind == RequestKind::kGenerate ? r.sampling.max_tokens : 0);
  }
  ARACH_RETURN_IF_ERROR(CheckAnswerLogprobs(context_.limits, requests, ParameterName("top_logprobs"), /*streamed=*/fields_.stream));
  ARACH_RETURN_IF_ERROR(ticket_.ReserveTokens(tokens, ParameterName("max_tokens")));
  choices_.assign(requests.size(), Choice{});
  run_ = GenerationRun::Create(engine(), *context_.metrics, *context_.shadow, variant_.variant, static_cast<int>(requests.size()),
                               ticket_.caller().key);
  for (size_t c = 0; c < requests.size(); ++c) {
    choices_[c].prompt_index = static_cast<int>(c / static_cast<size_t>(fields_.n));
    choices_[c].prompt = requests[c].prompt;
    choices_[c].copy = CopiesItsLead(c, requests[c]);
    if (choices_[c].copy) continue;  // registered as a copy when its lead was submitted
    for (size_t copy = c + 1; copy < requests.size() && CopiesItsLead(copy, requests[copy]); ++copy) {
      run_->AnswerAsCopy(static_cast<int>(copy), static_cast<int>(c));
    }
    const std::string& prompt_field = prompt_fields[c];
    requests[c].attention_diagnostics = fields_.diagnostics;
    const bool own_constraint = requests[c].constraint.active();
    if (!own_constraint) requests[c].constraint = fields_.structured_output.constraint;
    context_.policy->Apply(requests[c]);
    const absl::Status submitted = run_->Submit(static_cast<int>(c), std::move(requests[c]), [&](absl::string_view field) {
      if (field == "prompt") return prompt_field;
      if (field == "constraint") return own_constraint ? own_constraint_field : fields_.structured_output.field;
      return ParameterName(field);
    });
    if (!submitted.ok()) {
      run_->CancelAll();
      run_->WaitFinished();
      return submitted;
    }
  }
  return absl::OkStatus();
}

void GenerationCall::Apply(ChoiceEvent& event) {
  Choice& choice = choices_[static_cast<size_t>(event.choice)];
  if (!event.finish) {
    choice.text += event.chunk.text;
    for (SampledToken& t : event.chunk.tokens) choice.tokens.push_back(std::move(t));
    if (event.chunk.prompt_scores) choice.prompt_scores = std::move(event.chunk.prompt_scores);
    return;
  }
  choice.finish = std::move(event.finish);
  const FinishInfo& info = *choice.finish;
  if (!Answered(info)) {
    Fail(info.status.ok() ? absl::CancelledError("the request was cancelled") : info.status);
    return;
  }
  choice.text += info.text;
}

json GenerationCall::Envelope(json choices) const {
  return {{"id", absl::StrCat(identity_.id_prefix, identity_.request_id)},
          {"object", ObjectName()},
          {"created", created_},
          {"model", fields_.model},
          {"choices", std::move(choices)},
          {"arach_variant", variant_.variant.Name()}};
}

std::optional<json> GenerationCall::AttentionJsonOf(const Choice& choice) const {
  if (!fields_.diagnostics || !choice.finish || !choice.finish->attention) return std::nullopt;
  return AttentionJson(*choice.finish->attention);
}

json GenerationCall::ChoiceWithExtensions(int index, Choice& choice, bool final) {
  json token_ids = json::array();  // return_token_ids: the tokens ChoiceJson writes (and clears)
  if (fields_.return_token_ids) {
    for (const SampledToken& t : choice.tokens) token_ids.push_back(t.token);
  }
  choice.tokens_written += static_cast<int>(choice.tokens.size());
  json out = ChoiceJson(index, choice, final);
  if (final) {
    if (std::optional<json> attention = AttentionJsonOf(choice)) out["arach_attention"] = std::move(*attention);
  }
  if (fields_.return_token_ids) {
    out["token_ids"] = std::move(token_ids);
    if (!choice.opened && !PromptFieldsBesideChoices()) out["prompt_token_ids"] = choice.prompt;
  }
  return out;
}

void GenerationCall::PutPromptLogprobs(int index, json& into) {
  const Choice& lead = PromptLead(index);
  if (!fields_.prompt_logprobs || !lead.finish) return;
  absl::StatusOr<json> prompt_logprobs = PromptLogprobsJson(engine().tokenizer(), lead.prompt, *lead.finish, *fields_.prompt_logprobs);
  if (prompt_logprobs.ok()) {
    into["prompt_logprobs"] = std::move(*prompt_logprobs);
  } else {
    Fail(prompt_logprobs.status());
  }
}

json GenerationCall::UsageJson() const {
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0, drafted = 0, kept = 0;
  for (size_t c = 0; c < choices_.size(); ++c) {
    const Choice& choice = choices_[c];
    if (!choice.finish) continue;
    if (LeadsItsPrompt(c)) {  // each prompt once
      prompt_tokens += choice.finish->usage.prompt_tokens;
      cached_tokens += choice.finish->usage.cached_prompt_tokens;
    }
    completion_tokens += choice.finish->usage.completion_tokens;
    if (!choice.copy) {  // a copy's drafts are its lead's
      drafted += choice.finish->usage.draft_tokens;
      kept += choice.finish->usage.accepted_draft_tokens;
    }
  }
  json usage = {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  // OpenAI's names: predicted tokens the output kept, and those computed and dropped (not in completion_tokens here).
  if (fields_.prediction) {
    usage["completion_tokens_details"] = {{"accepted_prediction_tokens", kept}, {"rejected_prediction_tokens", drafted - kept}};
  }
  return usage;
}

json GenerationCall::WholeAnswer() {
  json choices = json::array();
  for (size_t c = 0; c < choices_.size(); ++c) choices.push_back(ChoiceWithExtensions(static_cast<int>(c), choices_[c], true));
  json body = Envelope(std::move(choices));
  body["usage"] = UsageJson();
  DecorateWhole(body);
  return body;
}

void GenerationCall::RespondWhole(httplib::Response& response, const std::function<bool()>& client_hung_up) {
  bool abandoned = false;
  while (!run_->WaitFinishedFor(kClientCheckInterval)) {
    if (abandoned || !client_hung_up()) continue;
    abandoned = true;  // nobody will read the answer: stop computing it (each choice still delivers its end)
    run_->CancelAll();
  }
  if (abandoned) {
    response.status = kClientClosedRequest;
    End(kClientClosedRequest);
    return;
  }
  absl::StatusOr<json> answer = TakeWholeAnswer();
  if (!answer.ok()) {
    SendError(response, answer.status());
  } else {
    SendJson(response, 200, *answer);
  }
  End(response.status);
}

absl::StatusOr<json> GenerationCall::TakeWholeAnswer() {
  for (ChoiceEvent& event : run_->Take(std::chrono::milliseconds(0))) Apply(event);
  json body = failure_.ok() ? WholeAnswer() : json();  // (a failure found while the answer is built counts too)
  if (!failure_.ok()) return failure_;
  return body;
}

absl::StatusOr<json> GenerationCall::FinishUnattended(const std::function<void()>& on_begun) {
  bool begun = false;
  while (!run_->WaitFinishedFor(kClientCheckInterval)) {
    if (begun || !run_->begun()) continue;
    begun = true;
    on_begun();
  }
  absl::StatusOr<json> answer = TakeWholeAnswer();
  End(UnattendedHttpStatus(answer.status()));
  return answer;
}

absl::Status GenerationCall::StreamUnattended(ServerSentEvents& events) {
  while (!events.ended() && PumpStream(events)) {
  }
  run_->WaitFinished();
  End(UnattendedHttpStatus(failure_));
  return failure_;
}

bool GenerationCall::StreamChoice(ServerSentEvents& events, int index, Choice& choice, bool finished) {
  json chunk_choice = ChoiceWithExtensions(index, choice, finished);
  if (SaysNothing(chunk_choice)) return true;  // (a chat choice's first chunk says its role)
  json chunk = Envelope(json::array({std::move(chunk_choice)}));
  if (fields_.return_token_ids && !choice.opened && PromptFieldsBesideChoices()) chunk["prompt_token_ids"] = choice.prompt;
  if (fields_.continuous_usage) {  // this choice's so far (vLLM's continuous_usage_stats)
    const int prompt_tokens = static_cast<int>(choice.prompt.size());
    chunk["usage"] = {{"prompt_tokens", prompt_tokens},
                      {"completion_tokens", choice.tokens_written},
                      {"total_tokens", prompt_tokens + choice.tokens_written}};
  }
  if (!events.Data(JsonText(chunk))) return false;
  choice.opened = true;
  return true;
}

bool GenerationCall::StreamEnded(ServerSentEvents& events) {
  if (fields_.include_usage) {
    json usage = Envelope(json::array());
    usage["usage"] = UsageJson();
    if (!events.Data(JsonText(usage))) return false;
  }
  return events.Done();
}

bool GenerationCall::StreamFailed(ServerSentEvents& events, const absl::Status& failure) {
  events.Data(JsonText(ErrorBody(failure)));
  return events.Done();
}

bool GenerationCall::PumpStream(ServerSentEvents& events) {
  if (!stream_opened_) {
    stream_opened_ = true;
    if (!StreamOpened(events)) return false;
  }
  std::vector<ChoiceEvent> taken = run_->Take(kServerSentEventsKeepAlive);
  if (taken.empty() && !run_->over()) return events.KeepAlive();
  for (ChoiceEvent& event : taken) {
    const int index = event.choice;
    const bool finished = event.finish.has_value();
    Apply(event);
    if (!failure_.ok()) break;
    Choice& choice = choices_[static_cast<size_t>(index)];
    if (!finished && choice.text.empty() && choice.tokens.empty() && choice.opened) continue;  // nothing to say yet
    if (!StreamChoice(events, index, choice, finished)) return false;
    if (!failure_.ok()) break;
  }
  if (!failure_.ok()) {
    run_->CancelAll();
    return StreamFailed(events, failure_);
  }
  if (!run_->over()) return true;
  return StreamEnded(events);
}

void GenerationCall::RespondStream(httplib::Response& response) {
  response.status = 200;
  std::shared_ptr<GenerationCall> self = shared_from_this();
  SendServerSentEvents(
      response, [self](ServerSentEvents& events) { return self->PumpStream(events); },
      [self](bool completed) {
        if (!completed) self->run_->CancelAll();
        self->run_->WaitFinished();
        self->End(completed && self->failure_.ok() ? 200 : kClientClosedRequest);
      });
}

void GenerationCall::End(int http_status) {
  if (ended_) return;
  ended_ = true;
  // A client that hung up left its choices' last events untaken: their ends still count (the log, the key's tokens).
  for (ChoiceEvent& event : run_->Take(std::chrono::milliseconds(0))) {
    if (event.finish) choices_[static_cast<size_t>(event.choice)].finish = std::move(event.finish);
  }
  FinishedRequest record(identity_.request_id, "http", identity_.route, variant_.variant.Name(), http_status);
  record.key = ticket_.caller().key;
  record.lora = variant_.lora;
  record.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  for (size_t c = 0; c < choices_.size(); ++c) {
    const Choice& choice = choices_[c];
    if (!choice.finish) continue;
    if (LeadsItsPrompt(c)) record.prompt_tokens += choice.finish->usage.prompt_tokens;
    record.completion_tokens += choice.finish->usage.completion_tokens;
    if (record.finish.empty() || !Answered(*choice.finish)) record.finish = FinishReasonName(choice.finish->reason);
    // The key is charged the answer's usage (as reserved in Submit): each prompt once, a copy's answer is its lead's.
    if (!choice.copy) {
      ticket_.usage()->AddUsedTokens((LeadsItsPrompt(c) ? choice.finish->usage.prompt_tokens : 0) + choice.finish->usage.completion_tokens);
    }
  }
  context_.request_log->Write(record);
  ticket_.Release();
}

void ServeGeneration(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                     const ClientConnection& client, const std::string& route, const StartGeneration& start) {
  const std::string request_id = RequestIdOf(request);
  response.set_header(kRequestIdHeader, request_id);
  const std::string authorization = request.get_header_value("Authorization");
  absl::StatusOr<CallTicket> ticket = AdmitCall(context, authorization);  // counts its own refusals
  absl::StatusOr<std::shared_ptr<GenerationCall>> call = absl::UnknownError("not started");
  std::string key = "unknown";
  if (ticket.ok()) {
    key = ticket->caller().key;
    const Caller caller = ticket->caller();
    CallOrigin origin{request_id, std::nullopt};
    if (const auto wait = ClientWaitOf(request)) origin.answer_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(*wait);
    call = start(std::move(*ticket), origin);
    if (!call.ok()) RecordRejection(context, call.status(), key);
    if (caller.limits.any()) SetRateLimitHeaders(response, context.rate_limiter->State(caller));
  } else {
    call = ticket.status();
    if (absl::StatusOr<Caller> caller = Authenticate(*context.keys, authorization); caller.ok()) {
      key = caller->key;
      if (caller->limits.any()) SetRateLimitHeaders(response, context.rate_limiter->State(*caller));
    }
  }
  if (!call.ok()) {
    SendError(response, call.status());
    FinishedRequest record(request_id, "http", route, response.get_header_value(kVariantHeader), response.status);
    record.key = key;
    context.request_log->Write(record);
    return;
  }
  if ((*call)->AnsweredInBackground(response)) return;  // (a background response: its answer is polled for)
  if ((*call)->streaming()) {
    (*call)->RespondStream(response);
  } else {
    (*call)->RespondWhole(response, [&client] { return client.HungUp(); });
  }
}

}  // namespace arach::server::http
