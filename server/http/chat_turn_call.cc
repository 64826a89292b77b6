#include "server/http/chat_turn_call.h"

#include "engine/core/status.h"
#include "server/chat_prompt_fit.h"
#include "server/reasoning_effort.h"
#include "server/request_limits.h"

namespace arach::server::http {

ChatTurnCall::ChatTurnCall(ServiceContext& context, CallTicket ticket, ChatRequest request, ResolvedVariant variant, Identity identity,
                           std::string conversation_field)
    : GenerationCall(context, std::move(ticket), request.fields, std::move(variant), std::move(identity)),
      request_(std::move(request)),
      conversation_field_(std::move(conversation_field)) {}

absl::StatusOr<ChatPrompt> RenderChatTurnPrompt(const ServiceContext& context, const Engine& engine, ChatRequest& request,
                                                const std::string& conversation_field) {
  std::shared_ptr<const ChatTemplate> own_template;
  if (request.chat_template) {
    ARACH_ASSIGN_OR_RETURN(own_template, ParseRequestChatTemplate(*request.chat_template, context.trust_request_chat_template, engine,
                                                                  "chat_template"));
  }
  const ChatTemplate* chat_template = ChatTemplateFor(engine, own_template.get());
  if (request.reasoning_effort && chat_template != nullptr) {  // (without a template, rendering says so)
    ARACH_RETURN_IF_ERROR(ApplyReasoningEffort(*request.reasoning_effort, *chat_template, request.input, request.reasoning_effort_field));
  }
  request.input.tools = ToolsForPrompt(std::move(request.input.tools), request.tool_choice, context.exclude_tools_when_tool_choice_none);
  ChatPrompt prompt;
  if (request.drop_oldest_exchanges_to_fit) {
    ARACH_ASSIGN_OR_RETURN(prompt, RenderChatPromptToFit(engine, context.limits, request.input, conversation_field, nullptr,
                                                         own_template.get()));
  } else {
    ARACH_ASSIGN_OR_RETURN(prompt, RenderChatPrompt(engine, context.limits, request.input, conversation_field, own_template.get()));
  }
  ARACH_RETURN_IF_ERROR(TruncatePrompt(request.fields.truncate_prompt_tokens, engine.model_config().max_positions, prompt.ids).status());
  return prompt;
}

absl::Status ChatTurnCall::Start() {
  Engine& e = engine();
  // (Named as the route names them: /v1/responses says max_output_tokens.)
  ARACH_RETURN_IF_ERROR(
      CheckSamplingLimits(limits(), fields().sampling, [this](absl::string_view field) { return ParameterName(field); }));
  ARACH_ASSIGN_OR_RETURN(prompt_, RenderChatTurnPrompt(context(), e, request_, conversation_field_));
  const ChatOutputFormat& format = context().chat_output;
  ARACH_ASSIGN_OR_RETURN(plan_, PlanChatTurn(format, request_.tools, request_.tool_choice, request_.parallel_tool_calls, prompt_.text,
                                             prompt_.continued, fields().structured_output.constraint, e.tokenizer(), "tools", "tool_choice"));
  ARACH_RETURN_IF_ERROR(CheckJoinedContent(plan_, e, fields().structured_output.constraint, fields().structured_output.field));
  SamplingParams sampling = fields().sampling;
  if (!plan_.banned_call_marker.empty()) sampling.bad_words.push_back(plan_.banned_call_marker);
  if (!fields().max_tokens_given) sampling.max_tokens = DefaultChatMaxTokens(limits(), e, caller().limits, prompt_.ids.size(), fields().n);
  std::vector<EngineRequest> requests;
  for (int i = 0; i < fields().n; ++i) {
    EngineRequest r;
    r.prompt = prompt_.ids;
    r.variant = variant();
    r.sampling = sampling;
    r.sampling.skip_special_tokens = text_skips_special_tokens();
    r.constraint = plan_.constraint;
    parsers_.emplace_back();
    unparsed_taken_.push_back(0);
    if (plan_.parse_tools || format.reasoning) parsers_.back().emplace(format, plan_.parse_tools, plan_.turn_start);
    AddEndOfTurn(prompt_, &r.sampling);
    if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
    logprobs_.emplace_back();
    if (fields().logprobs) logprobs_.back().emplace(e.tokenizer(), prompt_.ids, token_naming());
    requests.push_back(std::move(r));
  }
  const std::vector<std::string> prompt_fields(requests.size(), conversation_field_);
  return Submit(std::move(requests), prompt_fields, /*own_constraint_field=*/"tools");
}

ChatOutputDelta ChatTurnCall::TakeDelta(int index, Choice& choice, bool final) {
  ChatOutputDelta delta;
  std::optional<ChatOutputParser>& parser = parsers_[static_cast<size_t>(index)];
  if (!parser) {  // all content
    size_t& taken = unparsed_taken_[static_cast<size_t>(index)];
    if (!choice.text.empty()) delta.content_from.push_back({taken, taken + choice.text.size()});
    taken += choice.text.size();
    delta.content = std::move(choice.text);
    choice.text.clear();
    return delta;
  }
  delta = parser->Feed(choice.text);
  choice.text.clear();
  if (final) AppendDelta(delta, parser->Finish());
  return delta;
}

int ChatTurnCall::num_tool_calls(int index) const {
  const std::optional<ChatOutputParser>& parser = parsers_[static_cast<size_t>(index)];
  return parser ? parser->num_tool_calls() : 0;
}

}  // namespace arach::server::http
