#include "server/http/completions.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/fill_in_middle.h"
#include "server/http/token_logprobs.h"
#include "server/http/generation_call.h"
#include "server/http/http_call.h"
#include "server/request_limits.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// A completion: the legacy text_completion shape, echo, and OpenAI's legacy log-probs object.
class CompletionCall : public GenerationCall {
 public:
  CompletionCall(ServiceContext& context, CallTicket ticket, CompletionRequest request, ResolvedVariant variant,
                 const CallOrigin& origin)
      : GenerationCall(context, std::move(ticket), request.fields, std::move(variant),
                       {origin.request_id, "/v1/completions", "cmpl-", origin.answer_deadline}),
        request_(std::move(request)) {}

  // Tokenizes the prompts and submits every choice.
  absl::Status Start();

 protected:
  std::string ObjectName() const override { return "text_completion"; }
  json ChoiceJson(int index, Choice& choice, bool final) override;

 private:
  bool wants_logprobs() const { return fields().logprobs.has_value(); }
  absl::Status FlushTokens(Choice& choice, CompletionLogprobs& logprobs);
  // echo with logprobs: the prompt's log-probs into `logprobs` once they are known (the first null): in a stream's first
  // chunk of the choice, from the scores its first tokens brought; in a whole answer at the end, as its PromptLead
  // scored them. Whether they were written.
  absl::StatusOr<bool> AddEchoedPromptLogprobs(int index, const Choice& choice, bool final, CompletionLogprobs& logprobs);

  CompletionRequest request_;
  std::vector<std::optional<CompletionLogprobs>> logprobs_;  // [choices], when asked for
  std::vector<bool> prompt_logprobs_written_;                // [choices]: echo's, once written
};

absl::Status CompletionCall::Start() {
  Engine& e = engine();
  ARACH_RETURN_IF_ERROR(CheckSamplingLimits(limits(), fields().sampling));
  const int n = fields().n;
  const size_t prompts = request_.prompts.size();
  if (static_cast<int>(prompts) > limits().max_prompts_per_request) {
    return absl::InvalidArgumentError(absl::StrCat("prompt: ", prompts, " prompts exceed the limit of ",
                                                   limits().max_prompts_per_request, " (--max_prompts_per_request)"));
  }
  std::vector<EngineRequest> requests;
  std::vector<std::string> prompt_fields;
  std::vector<std::string> echoes;
  for (size_t p = 0; p < prompts; ++p) {
    const PromptInput& input = request_.prompts[p];
    const std::string field = prompts == 1 ? "prompt" : absl::StrCat("prompt[", p, "]");
    std::vector<int32_t> ids;
    std::optional<FillInMiddle> fim;  // with a suffix: the prompt and the suffix in the model's markers
    if (input.text) {
      if (request_.suffix) {
        ARACH_ASSIGN_OR_RETURN(fim, FillInMiddlePrompt(e.tokenizer(), *input.text, *request_.suffix, "suffix"));
      }
      ARACH_ASSIGN_OR_RETURN(ids, EncodeTextPrompt(e, limits(), field, fim ? fim->prompt : *input.text));
    } else {
      ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits(), field, input.ids.size()));
      ids = input.ids;
    }
    ARACH_ASSIGN_OR_RETURN(const bool truncated, TruncatePrompt(fields().truncate_prompt_tokens, e.model_config().max_positions, ids));
    std::string echo;
    if (request_.echo) {
      if (input.text && !truncated) {
        echo = *input.text;
      } else {
        ARACH_ASSIGN_OR_RETURN(echo, e.tokenizer().Decode(ids, fields().skip_special_tokens));
      }
    }
    for (int i = 0; i < n; ++i) {
      EngineRequest r;
      r.prompt = ids;
      r.sampling = fields().sampling;
      r.sampling.skip_special_tokens = fields().skip_special_tokens;
      if (fim) AddFillInMiddleEnds(*fim, &r.sampling);
      if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
      if (request_.score_only) r.kind = RequestKind::kScore;
      if (request_.echo && wants_logprobs()) {  // (a whole answer's Submit leaves the scoring to the prompt's first choice)
        r.sampling.prompt_logprobs = true;
        r.prompt_top_logprobs = *fields().logprobs;
        r.prompt_scores_in_first_chunk = fields().stream;
      }
      logprobs_.emplace_back();
      if (wants_logprobs()) {
        logprobs_.back().emplace(e.tokenizer(), request_.echo ? std::span<const int32_t>() : std::span<const int32_t>(ids), token_naming());
      }
      requests.push_back(std::move(r));
      prompt_fields.push_back(field);
      echoes.push_back(echo);
    }
  }
  for (EngineRequest& r : requests) r.variant = variant();
  prompt_logprobs_written_.assign(requests.size(), false);
  ARACH_RETURN_IF_ERROR(Submit(std::move(requests), prompt_fields));
  for (size_t c = 0; c < echoes.size(); ++c) choices()[c].text = echoes[c];  // written before the generated text
  return absl::OkStatus();
}

absl::Status CompletionCall::FlushTokens(Choice& choice, CompletionLogprobs& logprobs) {
  for (const SampledToken& t : choice.tokens) ARACH_RETURN_IF_ERROR(logprobs.Add(t.token, t.logprob, &t.top));
  choice.tokens.clear();
  return absl::OkStatus();
}

absl::StatusOr<bool> CompletionCall::AddEchoedPromptLogprobs(int index, const Choice& choice, bool final,
                                                              CompletionLogprobs& logprobs) {
  std::span<const float> scored;                      // [prompt_len - 1], t >= 1
  std::span<const std::vector<TokenLogprob>> ranked;  // [prompt_len - 1][k], the more likely first
  if (choice.prompt_scores) {
    scored = choice.prompt_scores->logprobs;
    ranked = choice.prompt_scores->top_logprobs;
  } else if (final) {
    const Choice& scorer = streaming() ? choice : PromptLead(index);
    if (!scorer.finish) return absl::InternalError("echo: the prompt's log-probs are read before its first choice finished");
    scored = scorer.finish->prompt_logprobs;
    ranked = scorer.finish->prompt_top_logprobs;
  } else {
    return false;  // not known yet
  }
  const std::vector<int32_t>& prompt = choice.prompt;
  // logprobs: 0 asks for no alternatives: the engine keeps none for the prompt, and a prompt token's entry is
  // then, as a generated token's, the token itself (not null beside the generated tokens' objects).
  const std::vector<TokenLogprob> no_alternatives;
  for (size_t t = 0; t < prompt.size(); ++t) {
    if (t == 0 || scored.size() < t) {
      ARACH_RETURN_IF_ERROR(logprobs.Add(prompt[t], std::nullopt, nullptr));
      continue;
    }
    const std::vector<TokenLogprob>& all = ranked.size() >= t ? ranked[t - 1] : no_alternatives;
    // The engine kept as many alternatives as prompt_logprobs or logprobs asks for, the more likely first.
    const std::vector<TokenLogprob> top(all.begin(), all.begin() + std::min(all.size(), static_cast<size_t>(*fields().logprobs)));
    ARACH_RETURN_IF_ERROR(logprobs.Add(prompt[t], scored[t - 1], &top));
  }
  return true;
}

json CompletionCall::ChoiceJson(int index, Choice& choice, bool final) {
  json out = {{"index", index}, {"text", std::move(choice.text)}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  choice.text.clear();
  if (std::optional<CompletionLogprobs>& logprobs = logprobs_[static_cast<size_t>(index)]; logprobs) {
    // With echo the prompt's log-probs come first (the first one null), then the generated tokens'.
    absl::Status status;
    if (const size_t c = static_cast<size_t>(index); request_.echo && !prompt_logprobs_written_[c]) {
      absl::StatusOr<bool> written = AddEchoedPromptLogprobs(index, choice, final, *logprobs);
      status = written.status();
      if (written.ok()) prompt_logprobs_written_[c] = *written;
    }
    if (status.ok()) status = FlushTokens(choice, *logprobs);
    if (!status.ok()) Fail(status);
    out["logprobs"] = logprobs->TakeJson();
  }
  choice.tokens.clear();
  if (final && choice.finish && Answered(*choice.finish)) {
    out["finish_reason"] = FinishReasonName(choice.finish->reason);
    out["stop_reason"] = StopReasonJson(*choice.finish);
    PutPromptLogprobs(index, out);
  }
  return out;
}

}  // namespace

void HandleCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                       const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/completions",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(CompletionRequest parsed, ParseCompletionRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<CompletionCall>(context, std::move(ticket), std::move(parsed), std::move(variant),
                                                                 origin);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
