#include "server/http/chat_completions.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/chat_output/chat_output_parser.h"
#include "server/chat_prompt.h"
#include "server/http/chat_request.h"
#include "server/http/generation_call.h"
#include "server/http/http_call.h"
#include "server/http/token_logprobs.h"
#include "server/request_limits.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

class ChatCall : public GenerationCall {
 public:
  ChatCall(ServiceContext& context, CallTicket ticket, ChatRequest request, ResolvedVariant variant, std::string request_id)
      : GenerationCall(context, std::move(ticket), request.fields, std::move(variant),
                       {std::move(request_id), "/v1/chat/completions", "chatcmpl-"}),
        request_(std::move(request)) {}

  absl::Status Start();

 protected:
  std::string ObjectName() const override { return fields().stream ? "chat.completion.chunk" : "chat.completion"; }
  json ChoiceJson(int index, Choice& choice, bool final) override;
  void DecorateWhole(json& body) override {
    if (request_.return_prompt) body["arach_prompt"] = prompt_.text;
  }

 private:
  // The tool calls of `delta` as OpenAI writes them, numbered on from the choice's earlier calls.
  json ToolCallsJson(int index, const ChatOutputDelta& delta);

  ChatRequest request_;
  ChatPrompt prompt_;
  ChatTurnPlan plan_;
  std::vector<std::optional<ChatLogprobs>> logprobs_;  // [choices], when asked for
  std::vector<std::optional<ChatOutputParser>> parsers_;  // [choices], where the model's reasoning or tool calls are read
};

absl::Status ChatCall::Start() {
  Engine& e = engine();
  ARACH_RETURN_IF_ERROR(CheckSamplingLimits(limits(), fields().sampling));
  ARACH_ASSIGN_OR_RETURN(prompt_, RenderChatPrompt(e, limits(), request_.input, "messages"));
  const ChatOutputFormat& format = context().chat_output;
  ARACH_ASSIGN_OR_RETURN(plan_, PlanChatTurn(format, request_.tools, request_.tool_choice, request_.parallel_tool_calls, prompt_.text,
                                             fields().structured_output.constraint, e.tokenizer(), "tools", "tool_choice"));
  SamplingParams sampling = fields().sampling;
  if (!fields().max_tokens_given) sampling.max_tokens = DefaultChatMaxTokens(limits(), e, caller().limits, prompt_.ids.size(), fields().n);
  std::vector<EngineRequest> requests;
  for (int i = 0; i < fields().n; ++i) {
    EngineRequest r;
    r.prompt = prompt_.ids;
    r.variant = variant();
    r.sampling = sampling;
    r.sampling.skip_special_tokens = fields().skip_special_tokens && !plan_.keep_special_tokens;
    r.constraint = plan_.constraint;
    parsers_.emplace_back();
    if (plan_.parse_tools || format.reasoning) parsers_.back().emplace(format, plan_.parse_tools, plan_.prompt_opens_reasoning);
    AddEndOfTurn(prompt_, &r.sampling);
    if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
    logprobs_.emplace_back();
    if (fields().logprobs) logprobs_.back().emplace(e.tokenizer(), prompt_.ids);
    requests.push_back(std::move(r));
  }
  const std::vector<std::string> prompt_fields(requests.size(), "messages");
  return Submit(std::move(requests), prompt_fields, /*own_constraint_field=*/"tools");
}

json ChatCall::ToolCallsJson(int index, const ChatOutputDelta& delta) {
  json calls = json::array();
  const int first = parsers_[static_cast<size_t>(index)]->num_tool_calls() - static_cast<int>(delta.tool_calls.size());
  for (size_t k = 0; k < delta.tool_calls.size(); ++k) {
    const ParsedToolCall& call = delta.tool_calls[k];
    json entry = {{"id", NewToolCallId()}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
    if (fields().stream) entry["index"] = first + static_cast<int>(k);
    calls.push_back(std::move(entry));
  }
  return calls;
}

json ChatCall::ChoiceJson(int index, Choice& choice, bool final) {
  json message = json::object();
  if (!fields().stream || !choice.opened) message["role"] = "assistant";
  std::optional<ChatOutputParser>& parser = parsers_[static_cast<size_t>(index)];
  if (parser) {  // reasoning and tool calls come apart from the content
    ChatOutputDelta delta = parser->Feed(choice.text);
    if (final) {
      ChatOutputDelta rest = parser->Finish();
      delta.reasoning += rest.reasoning;
      delta.content += rest.content;
      for (ParsedToolCall& call : rest.tool_calls) delta.tool_calls.push_back(std::move(call));
    }
    const bool calls = parser->num_tool_calls() > 0;
    if (!fields().stream) {
      message["content"] = delta.content.empty() && calls ? json(nullptr) : json(delta.content);
      message["reasoning_content"] = delta.reasoning.empty() ? json(nullptr) : json(delta.reasoning);
      if (calls) message["tool_calls"] = ToolCallsJson(index, delta);
    } else {
      if (!delta.content.empty() || !choice.opened) message["content"] = delta.content;
      if (!delta.reasoning.empty()) message["reasoning_content"] = delta.reasoning;
      if (!delta.tool_calls.empty()) message["tool_calls"] = ToolCallsJson(index, delta);
    }
  } else if (!fields().stream || !choice.text.empty() || !choice.opened) {
    message["content"] = choice.text;
  }
  choice.text.clear();
  json out = {{"index", index}, {fields().stream ? "delta" : "message", std::move(message)}, {"logprobs", nullptr},
              {"finish_reason", nullptr}};
  if (std::optional<ChatLogprobs>& logprobs = logprobs_[static_cast<size_t>(index)]; logprobs) {
    for (const SampledToken& t : choice.tokens) {
      if (absl::Status status = logprobs->Add(t); !status.ok()) Fail(status);
    }
    out["logprobs"] = logprobs->TakeJson();
  }
  choice.tokens.clear();
  if (final && choice.finish && Answered(*choice.finish)) {
    const bool called = parser && parser->num_tool_calls() > 0;
    out["finish_reason"] = called && choice.finish->reason == FinishReason::kStop ? "tool_calls" : FinishReasonName(choice.finish->reason);
  }
  return out;
}

}  // namespace

void HandleChatCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response) {
  ServeGeneration(context, request, response, "/v1/chat/completions",
                  [&](CallTicket ticket, const std::string& request_id) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(ChatRequest parsed, ParseChatRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<ChatCall>(context, std::move(ticket), std::move(parsed), std::move(variant), request_id);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
