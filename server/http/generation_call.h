// One HTTP generation call (completions and chat completions alike) from submission to its last byte: one
// engine request per choice through a GenerationRun; a plain answer waits for every choice, a streamed one
// writes server-sent events as tokens arrive and cancels every choice when the client goes away. The
// request's log line and the end of its admission ticket come when every choice has finished. Subclasses
// say how a choice, a chunk and the whole answer look.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "server/admission.h"
#include "server/http/client_connection.h"
#include "server/http/completion_request.h"
#include "server/http/generation_run.h"
#include "server/http/server_sent_events.h"
#include "server/http/token_logprobs.h"
#include "server/service_context.h"

namespace arach::server::http {

// The status a call's record ends with when its client hung up before the answer's end (nginx's 499).
inline constexpr int kClientClosedRequest = 499;
// How often a handler waiting for a whole answer asks whether its client is still there.
inline constexpr std::chrono::milliseconds kClientCheckInterval{250};

// A choice as it is built: what arrived since it was last written.
struct Choice {
  int prompt_index = 0;
  std::vector<int32_t> prompt;        // the prompt's token ids
  std::string text;                   // text not yet written (a stream) or all of it
  std::vector<SampledToken> tokens;   // generated tokens not yet written
  std::optional<FinishInfo> finish;
  std::shared_ptr<const PromptScores> prompt_scores;  // brought by its first tokens where it scores its prompt
  bool opened = false;                // a stream wrote its first chunk
  int tokens_written = 0;             // generated tokens written so far
  bool copy = false;                  // answered as a copy of its PromptLead (CopiesItsLead): it used no tokens
};

// Where a generation call comes from: the request id it answers under, and when its client stops waiting for a
// whole answer (ClientWaitOf; a streamed answer is not bounded by it: its first bytes come at once).
struct CallOrigin {
  std::string request_id;
  std::optional<Clock::time_point> answer_deadline;
};

class GenerationCall : public std::enable_shared_from_this<GenerationCall> {
 public:
  struct Identity {
    std::string request_id;
    std::string route;      // "/v1/completions", "/v1/chat/completions"
    std::string id_prefix;  // "cmpl-", "chatcmpl-"
    // A whole answer's choices end (DEADLINE_EXCEEDED, 504) when its client stops waiting (CallOrigin).
    std::optional<Clock::time_point> answer_deadline;
  };
  GenerationCall(ServiceContext& context, CallTicket ticket, GenerationFields fields, ResolvedVariant variant, Identity identity);
  virtual ~GenerationCall() = default;

  // Submits `requests[i]` as choice i (prompt-major: choices [p * n, (p + 1) * n) share prompt p); an engine
  // field error is named through `prompt_fields[i]`'s prompt name and OpenAiFieldName, a constraint's through the
  // parameter it came from: `own_constraint_field` for one a request brings (chat's tool calls: "tools"), else
  // the structured output's. On error nothing stays queued.
  absl::Status Submit(std::vector<EngineRequest> requests, const std::vector<std::string>& prompt_fields,
                      const std::string& own_constraint_field = "");
  // The whole answer, once every choice has finished (or the first failure). `client_hung_up` is asked every
  // kClientCheckInterval while the choices run: once it says yes, they are cancelled and the call ends as 499.
  void RespondWhole(httplib::Response& response, const std::function<bool()>& client_hung_up);
  // Server-sent events as tokens arrive, then the usage (when asked) and [DONE].
  void RespondStream(httplib::Response& response);
  bool streaming() const { return fields_.stream; }
  // Answers the request at once, before the choices have run, when the call runs in the background (the Responses
  // API's background mode; its answer is fetched later): whether it did. The default runs nothing in the background.
  virtual bool AnsweredInBackground(httplib::Response& /*response*/) { return false; }
  // With nobody waiting for the answer (a background call): waits for every choice, then ends the call and returns
  // its whole answer or the failure (CANCELLED once Cancel was called). `on_begun` is called once, from this
  // thread, when the first choice has produced something (the engine has begun the call).
  absl::StatusOr<nlohmann::json> FinishUnattended(const std::function<void()>& on_begun);
  // With nobody attached to the stream (a streamed background call): writes the stream into `events` (an EventLog's)
  // until it has ended, waits for every choice, then ends the call; the failure (CANCELLED once Cancel was called), or
  // OK.
  absl::Status StreamUnattended(ServerSentEvents& events);
  // Cancels every choice still running (each still delivers its end).
  void Cancel() { run_->CancelAll(); }

 protected:
  // The choice object of `choice` (writes and clears its pending text and tokens). `final`: it has finished.
  virtual nlohmann::json ChoiceJson(int index, Choice& choice, bool final) = 0;
  // The `object` of the answer ("text_completion", "chat.completion", "chat.completion.chunk").
  virtual std::string ObjectName() const = 0;
  // Fields added to the whole answer (e.g. the rendered prompt).
  virtual void DecorateWhole(nlohmann::json& /*body*/) {}
  // Where the prompt's own fields go (return_token_ids' prompt_token_ids): beside the choices, in the answer or its
  // chunk (chat, whose choices share one prompt), or in each choice (completions, the default).
  virtual bool PromptFieldsBesideChoices() const { return false; }
  // The OpenAI parameter an engine field stands for (default OpenAiFieldName; the Responses API says
  // max_output_tokens where the engine says max_tokens).
  virtual std::string ParameterName(absl::string_view engine_field) const { return OpenAiFieldName(engine_field); }

  // How the answer is written. The defaults are the completions shape (completions and chat completions):
  // WholeAnswer is the envelope of every choice with the usage; a stream is one chunk per choice event, the
  // usage chunk when asked, then [DONE], and a failure is an error object then [DONE]. Each stream hook returns
  // false when the client is gone.
  virtual nlohmann::json WholeAnswer();
  virtual bool StreamOpened(ServerSentEvents& /*events*/) { return true; }  // before any choice event
  // `choice` has new text or tokens, or has `finished`; the hook writes and clears what it has.
  virtual bool StreamChoice(ServerSentEvents& events, int index, Choice& choice, bool finished);
  virtual bool StreamEnded(ServerSentEvents& events);  // every choice has its answer
  virtual bool StreamFailed(ServerSentEvents& events, const absl::Status& failure);

  const GenerationFields& fields() const { return fields_; }
  const RequestLimits& limits() const { return context_.limits; }
  const ServiceContext& context() const { return context_; }
  const Variant& variant() const { return variant_.variant; }
  Engine& engine() const { return ticket_.engine(); }
  const Caller& caller() const { return ticket_.caller(); }
  std::vector<Choice>& choices() { return choices_; }
  const std::vector<Choice>& choices() const { return choices_; }
  // Records the first failure (later ones are dropped).
  void Fail(const absl::Status& status) {
    if (failure_.ok()) failure_ = status;
  }
  // The envelope every answer and chunk shares: id, object, created, model, choices, arach_variant.
  nlohmann::json Envelope(nlohmann::json choices) const;
  nlohmann::json UsageJson() const;
  // The choice's attention diagnostics (arach_attention) once it has finished, when the request asked.
  std::optional<nlohmann::json> AttentionJsonOf(const Choice& choice) const;
  // The first choice of choice `index`'s prompt. In a whole answer only it scores the prompt (prompt_logprobs,
  // echo's log-probs; the prompt's other choices share prompt and variant, so their scores would be its own; in a
  // stream each choice scores it, as its lead's scores may come after its own first chunk) and only its prompt
  // counts in the usage; the prompt's other choices take both from it.
  const Choice& PromptLead(int index) const { return choices_[static_cast<size_t>(index - index % fields_.n)]; }
  bool LeadsItsPrompt(size_t index) const { return index % static_cast<size_t>(fields_.n) == 0; }
  // Whether choice `index`, whose engine request is `request`, is answered as a copy of its PromptLead instead of
  // by an engine request of its own: a prompt only scored (max_tokens 0) is scored once, whatever n.
  bool CopiesItsLead(size_t index, const EngineRequest& request) const {
    return request.kind == RequestKind::kScore && !LeadsItsPrompt(index);
  }
  // When the request asked for prompt_logprobs: sets `into`["prompt_logprobs"] to the prompt log-probs of choice
  // `index` (its PromptLead's; token_logprobs.h's PromptLogprobsJson); a failure to build them fails the call.
  void PutPromptLogprobs(int index, nlohmann::json& into);
  // How the choices' log-prob entries name their tokens (return_tokens_as_token_ids).
  TokenNaming token_naming() const { return fields_.return_tokens_as_token_ids ? TokenNaming::kId : TokenNaming::kText; }
  const Identity& identity() const { return identity_; }
  int64_t created() const { return created_; }
  std::string variant_name() const { return variant_.variant.Name(); }

 private:
  void Apply(ChoiceEvent& event);
  // Once every choice has finished: applies their last events and builds WholeAnswer, or returns the first failure.
  absl::StatusOr<nlohmann::json> TakeWholeAnswer();
  // ChoiceJson, plus the choice's attention diagnostics once it has finished (when asked).
  nlohmann::json ChoiceWithExtensions(int index, Choice& choice, bool final);
  bool PumpStream(ServerSentEvents& events);
  void End(int http_status);

  ServiceContext& context_;
  CallTicket ticket_;
  GenerationFields fields_;
  ResolvedVariant variant_;
  Identity identity_;
  int64_t created_;
  Clock::time_point started_;
  std::shared_ptr<GenerationRun> run_;
  std::vector<Choice> choices_;  // [prompts x n], prompt-major
  absl::Status failure_;         // the first choice that ended without an answer
  bool stream_opened_ = false;
  bool ended_ = false;
};

// The finish reasons that carry an answer (stop, length).
bool Answered(const FinishInfo& info);
// A choice's `stop_reason` (vLLM's): the stop string or the request's stop token id that ended the text, else null
// (the model's end of sequence, max_tokens, a completed constraint).
nlohmann::json StopReasonJson(const FinishInfo& info);

// Serves a generation route: admits the call, lets `start` parse the body, resolve the variant and submit the
// choices, then answers whole or streamed. A refusal (400, 404, 429, 503) is answered in OpenAI's shape,
// counted in arach_requests_rejected_total and logged. The response carries x-request-id. A whole answer ends when
// its client stops waiting, where the client's library says when (ClientWaitOf), or once `client` has hung up.
using StartGeneration = std::function<absl::StatusOr<std::shared_ptr<GenerationCall>>(CallTicket ticket, const CallOrigin& origin)>;
void ServeGeneration(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                     const ClientConnection& client, const std::string& route, const StartGeneration& start);

}  // namespace arach::server::http
