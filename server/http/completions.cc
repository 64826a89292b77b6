#include "server/http/completions.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/admission.h"
#include "server/http/completion_logprobs.h"
#include "server/http/generation_run.h"
#include "server/http/http_call.h"
#include "server/http/openai_error.h"
#include "server/http/server_sent_events.h"
#include "server/request_log.h"
#include "server/request_mapping.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// One choice as it is built.
struct Choice {
  int prompt_index = 0;
  std::vector<int32_t> prompt;         // its prompt's token ids
  std::string echo_text;               // the prompt as it is echoed (echo only)
  std::string text;                    // text not yet sent (a stream) or all of it
  std::vector<SampledToken> tokens;    // generated tokens not yet in `logprobs`
  std::optional<CompletionLogprobs> logprobs;
  std::optional<FinishInfo> finish;
};

bool Answered(const FinishInfo& info) { return info.reason == FinishReason::kStop || info.reason == FinishReason::kLength; }

// The completion of one POST /v1/completions, from submission to the last byte.
class CompletionCall : public std::enable_shared_from_this<CompletionCall> {
 public:
  CompletionCall(ServiceContext& context, CallTicket ticket, CompletionRequest request, ResolvedVariant variant,
                 std::string request_id)
      : context_(context), ticket_(std::move(ticket)), request_(std::move(request)), variant_(std::move(variant)),
        request_id_(std::move(request_id)), created_(UnixSeconds()), started_(Clock::now()) {}

  // Tokenizes the prompts and submits every choice; on error nothing stays queued.
  absl::Status Submit();
  // Waits for every choice and answers with the whole completion (or the first choice's error).
  void RespondWhole(httplib::Response& response);
  // Answers with a stream of server-sent events.
  void RespondStream(httplib::Response& response);
  bool streaming() const { return request_.fields.stream; }

 private:
  const GenerationFields& fields() const { return request_.fields; }
  bool wants_logprobs() const { return fields().logprobs.has_value(); }
  // Adds the choice's pending generated tokens to its log-probs.
  absl::Status FlushTokens(Choice& choice);
  // Adds the prompt's tokens (log-probs from `info`, the first one null) to the choice's log-probs.
  absl::Status AddPromptLogprobs(Choice& choice, const FinishInfo& info);
  void Apply(ChoiceEvent& event);
  json ChoiceJson(int index, Choice& choice, bool with_finish);
  json UsageJson() const;
  json Envelope(json choices) const;
  // Writes the events queued so far; false when the client is gone.
  bool PumpStream(ServerSentEvents& events);
  // The log line and the end of the ticket, once every choice has finished.
  void End(int http_status);

  ServiceContext& context_;
  CallTicket ticket_;
  CompletionRequest request_;
  ResolvedVariant variant_;
  std::string request_id_;
  int64_t created_;
  Clock::time_point started_;
  std::shared_ptr<GenerationRun> run_;
  std::vector<Choice> choices_;  // [prompts x n], prompt-major
  absl::Status failure_;         // the first choice that ended without an answer
  bool ended_ = false;
};

absl::Status CompletionCall::Submit() {
  Engine& engine = ticket_.engine();
  const int n = fields().n;
  const size_t prompts = request_.prompts.size();
  ARACH_RETURN_IF_ERROR(CheckSamplingLimits(context_.limits, fields().sampling));
  std::vector<std::string> prompt_fields;
  for (size_t p = 0; p < prompts; ++p) {
    const PromptInput& input = request_.prompts[p];
    const std::string field = prompts == 1 ? "prompt" : absl::StrCat("prompt[", p, "]");
    std::vector<int32_t> ids;
    if (input.text) {
      ARACH_ASSIGN_OR_RETURN(ids, EncodeTextPrompt(engine, context_.limits, field, *input.text));
    } else {
      ARACH_RETURN_IF_ERROR(CheckPromptTokens(context_.limits, field, input.ids.size()));
      ids = input.ids;
    }
    std::string echo_text;
    if (request_.echo) {
      if (input.text) {
        echo_text = *input.text;
      } else {
        ARACH_ASSIGN_OR_RETURN(echo_text, engine.tokenizer().Decode(ids, fields().skip_special_tokens));
      }
    }
    for (int i = 0; i < n; ++i) {
      Choice choice;
      choice.prompt_index = static_cast<int>(p);
      choice.prompt = ids;
      choice.echo_text = echo_text;
      choices_.push_back(std::move(choice));
      prompt_fields.push_back(field);
    }
  }
  run_ = GenerationRun::Create(engine, *context_.metrics, variant_.variant, static_cast<int>(choices_.size()));
  for (size_t c = 0; c < choices_.size(); ++c) {
    Choice& choice = choices_[c];
    EngineRequest r;
    r.prompt = choice.prompt;
    r.variant = variant_.variant;
    r.sampling = fields().sampling;
    r.sampling.skip_special_tokens = fields().skip_special_tokens;
    if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(c % static_cast<size_t>(n));
    if (request_.score_only) r.kind = RequestKind::kScore;
    if (request_.echo && wants_logprobs()) {
      r.sampling.prompt_logprobs = true;
      r.prompt_top_logprobs = *fields().logprobs;
    }
    if (wants_logprobs()) choice.logprobs.emplace(engine.tokenizer(), request_.echo ? std::span<const int32_t>() : choice.prompt);
    const std::string& prompt_field = prompt_fields[c];
    const absl::Status submitted = run_->Submit(static_cast<int>(c), std::move(r), [&](absl::string_view field) {
      return field == "prompt" ? prompt_field : OpenAiFieldName(field);
    });
    if (!submitted.ok()) {
      run_->CancelAll();
      run_->WaitFinished();
      return submitted;
    }
  }
  if (request_.echo) {
    for (Choice& choice : choices_) choice.text = choice.echo_text;
  }
  return absl::OkStatus();
}

absl::Status CompletionCall::FlushTokens(Choice& choice) {
  if (choice.logprobs) {
    for (const SampledToken& t : choice.tokens) ARACH_RETURN_IF_ERROR(choice.logprobs->Add(t.token, t.logprob, &t.top));
  }
  choice.tokens.clear();
  return absl::OkStatus();
}

absl::Status CompletionCall::AddPromptLogprobs(Choice& choice, const FinishInfo& info) {
  for (size_t t = 0; t < choice.prompt.size(); ++t) {
    if (t == 0 || info.prompt_logprobs.size() < t) {
      ARACH_RETURN_IF_ERROR(choice.logprobs->Add(choice.prompt[t], std::nullopt, nullptr));
      continue;
    }
    const std::vector<TokenLogprob>* top = info.prompt_top_logprobs.size() >= t ? &info.prompt_top_logprobs[t - 1] : nullptr;
    ARACH_RETURN_IF_ERROR(choice.logprobs->Add(choice.prompt[t], info.prompt_logprobs[t - 1], top));
  }
  return absl::OkStatus();
}

void CompletionCall::Apply(ChoiceEvent& event) {
  Choice& choice = choices_[static_cast<size_t>(event.choice)];
  if (!event.finish) {
    choice.text += event.chunk.text;
    for (SampledToken& t : event.chunk.tokens) choice.tokens.push_back(std::move(t));
    return;
  }
  const FinishInfo& info = *event.finish;
  if (!Answered(info)) {
    if (failure_.ok()) failure_ = info.status.ok() ? absl::CancelledError("the request was cancelled") : info.status;
  } else {
    choice.text += info.text;
    if (choice.logprobs && request_.echo) {  // the prompt's log-probs come first, then the generated tokens'
      absl::Status status = AddPromptLogprobs(choice, info);
      if (status.ok()) status = FlushTokens(choice);
      if (!status.ok() && failure_.ok()) failure_ = status;
    }
  }
  choice.finish = std::move(event.finish);
}

json CompletionCall::ChoiceJson(int index, Choice& choice, bool with_finish) {
  json out = {{"index", index}, {"text", std::move(choice.text)}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  choice.text.clear();
  if (choice.logprobs) {
    const absl::Status status = FlushTokens(choice);
    if (!status.ok() && failure_.ok()) failure_ = status;
    out["logprobs"] = choice.logprobs->TakeJson();
  }
  if (with_finish && choice.finish && Answered(*choice.finish)) out["finish_reason"] = FinishReasonName(choice.finish->reason);
  return out;
}

json CompletionCall::UsageJson() const {
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  for (size_t c = 0; c < choices_.size(); ++c) {
    const Choice& choice = choices_[c];
    if (!choice.finish) continue;
    if (c % static_cast<size_t>(fields().n) == 0) {  // each prompt once
      prompt_tokens += choice.finish->usage.prompt_tokens;
      cached_tokens += choice.finish->usage.cached_prompt_tokens;
    }
    completion_tokens += choice.finish->usage.completion_tokens;
  }
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

json CompletionCall::Envelope(json choices) const {
  return {{"id", absl::StrCat("cmpl-", request_id_)}, {"object", "text_completion"}, {"created", created_},
          {"model", fields().model},                  {"choices", std::move(choices)},  {"arach_variant", variant_.variant.Name()}};
}

void CompletionCall::RespondWhole(httplib::Response& response) {
  run_->WaitFinished();
  for (ChoiceEvent& event : run_->Take(std::chrono::milliseconds(0))) Apply(event);
  json choices = json::array();
  for (size_t c = 0; c < choices_.size(); ++c) choices.push_back(ChoiceJson(static_cast<int>(c), choices_[c], true));
  if (!failure_.ok()) {
    SendError(response, failure_);
  } else {
    json body = Envelope(std::move(choices));
    body["usage"] = UsageJson();
    SendJson(response, 200, body);
  }
  End(response.status);
}

bool CompletionCall::PumpStream(ServerSentEvents& events) {
  std::vector<ChoiceEvent> taken = run_->Take(kServerSentEventsKeepAlive);
  if (taken.empty() && !run_->over()) return events.KeepAlive();
  for (ChoiceEvent& event : taken) {
    const int index = event.choice;
    const bool finished = event.finish.has_value();
    Apply(event);
    if (!failure_.ok()) break;
    Choice& choice = choices_[static_cast<size_t>(index)];
    if (!finished && choice.text.empty() && choice.tokens.empty()) continue;  // text held back, nothing to say yet
    if (!events.Data(JsonText(Envelope(json::array({ChoiceJson(index, choice, finished)}))))) return false;
  }
  if (!failure_.ok()) {
    run_->CancelAll();
    events.Data(JsonText(ErrorBody(failure_)));
    return events.Done();
  }
  if (!run_->over()) return true;
  if (fields().include_usage) {
    json usage = Envelope(json::array());
    usage["usage"] = UsageJson();
    if (!events.Data(JsonText(usage))) return false;
  }
  return events.Done();
}

void CompletionCall::RespondStream(httplib::Response& response) {
  response.status = 200;
  // The first choices' texts were echoed: they go out with the first events.
  std::shared_ptr<CompletionCall> self = shared_from_this();
  SendServerSentEvents(
      response, [self](ServerSentEvents& events) { return self->PumpStream(events); },
      [self](bool completed) {
        if (!completed) self->run_->CancelAll();
        self->run_->WaitFinished();
        self->End(completed && self->failure_.ok() ? 200 : 499);
      });
}

void CompletionCall::End(int http_status) {
  if (ended_) return;
  ended_ = true;
  FinishedRequest record(request_id_, "http", "/v1/completions", variant_.variant.Name(), http_status);
  record.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  for (size_t c = 0; c < choices_.size(); ++c) {
    const Choice& choice = choices_[c];
    if (!choice.finish) continue;
    if (c % static_cast<size_t>(fields().n) == 0) record.prompt_tokens += choice.finish->usage.prompt_tokens;
    record.completion_tokens += choice.finish->usage.completion_tokens;
    if (record.finish.empty() || !Answered(*choice.finish)) record.finish = FinishReasonName(choice.finish->reason);
  }
  context_.request_log->Write(record);
  ticket_.Release();
}

// Everything up to submission; the status that refuses the request (counted as rejected).
absl::StatusOr<std::shared_ptr<CompletionCall>> StartCompletion(ServiceContext& context, const httplib::Request& http_request,
                                                                 httplib::Response& response, const std::string& request_id) {
  absl::StatusOr<CallTicket> ticket = AdmitCall(context);  // counts its own refusals
  if (!ticket.ok()) return ticket.status();
  auto prepare = [&]() -> absl::StatusOr<std::shared_ptr<CompletionCall>> {
    ARACH_ASSIGN_OR_RETURN(CompletionRequest request, ParseCompletionRequest(http_request.body));
    if (request.fields.stream && request.echo && request.fields.logprobs) {
      return absl::InvalidArgumentError(
          "stream: echo with logprobs is not streamed (the prompt's log-probs come at the end); ask without stream");
    }
    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveVariant(context, request.fields));
    SetVariantHeaders(response, variant);
    auto call = std::make_shared<CompletionCall>(context, std::move(*ticket), std::move(request), std::move(variant), request_id);
    ARACH_RETURN_IF_ERROR(call->Submit());
    return call;
  };
  absl::StatusOr<std::shared_ptr<CompletionCall>> call = prepare();
  if (!call.ok()) RecordRejection(context, call.status());
  return call;
}

}  // namespace

void HandleCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  const std::string request_id = RequestIdOf(request);
  response.set_header(kRequestIdHeader, request_id);
  absl::StatusOr<std::shared_ptr<CompletionCall>> call = StartCompletion(context, request, response, request_id);
  if (!call.ok()) {
    SendError(response, call.status());
    FinishedRequest record(request_id, "http", "/v1/completions", response.get_header_value(kVariantHeader), response.status);
    context.request_log->Write(record);
    return;
  }
  if ((*call)->streaming()) {
    (*call)->RespondStream(response);
  } else {
    (*call)->RespondWhole(response);
  }
}

}  // namespace arach::server::http
