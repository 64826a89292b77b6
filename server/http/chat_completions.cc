#include "server/http/chat_completions.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/http/chat_request.h"
#include "server/http/chat_turn_call.h"
#include "server/http/http_call.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

class ChatCall : public ChatTurnCall {
 public:
  ChatCall(ServiceContext& context, CallTicket ticket, ChatRequest request, ResolvedVariant variant, const CallOrigin& origin)
      : ChatTurnCall(context, std::move(ticket), std::move(request), std::move(variant),
                     {origin.request_id, "/v1/chat/completions", "chatcmpl-", origin.answer_deadline}, "messages") {}

 protected:
  std::string ObjectName() const override { return fields().stream ? "chat.completion.chunk" : "chat.completion"; }
  json ChoiceJson(int index, Choice& choice, bool final) override;
  void DecorateWhole(json& body) override {
    if (request().return_prompt) body["arach_prompt"] = prompt().text;
    if (choices().empty()) return;
    PutPromptLogprobs(0, body);  // vLLM's place: beside the choices, which share the prompt
    if (fields().return_token_ids) body["prompt_token_ids"] = choices()[0].prompt;
  }
  bool PromptFieldsBesideChoices() const override { return true; }

 private:
  // The tool calls of `delta` as OpenAI writes them: whole in a whole answer; in a stream, a call's first piece
  // with its index, id and name, later ones with its index and more of its arguments.
  json ToolCallsJson(const ChatOutputDelta& delta);
};

json ChatCall::ToolCallsJson(const ChatOutputDelta& delta) {
  json calls = json::array();
  for (const ToolCallPiece& piece : delta.tool_calls) {
    json entry = json::object();
    if (fields().stream) entry["index"] = piece.index;
    if (!piece.name.empty()) {  // the call's first piece: OpenAI's chunk names it and gives its id
      entry["id"] = NewToolCallId(context().chat_output.tools);
      entry["type"] = "function";
      entry["function"] = {{"name", piece.name}, {"arguments", piece.arguments}};
    } else if (!piece.arguments.empty()) {
      entry["function"] = {{"arguments", piece.arguments}};
    } else {
      continue;  // only the call's end, which a chunk does not say
    }
    calls.push_back(std::move(entry));
  }
  return calls;
}

json ChatCall::ChoiceJson(int index, Choice& choice, bool final) {
  json message = json::object();
  if (!fields().stream || !choice.opened) message["role"] = "assistant";
  if (parses(index)) {  // reasoning and tool calls come apart from the content
    ChatOutputDelta delta = TakeDelta(index, choice, final);
    const bool calls = num_tool_calls(index) > 0;
    if (!fields().stream) {
      message["content"] = delta.content.empty() && calls ? json(nullptr) : json(delta.content);
      message["reasoning_content"] = delta.reasoning.empty() ? json(nullptr) : json(delta.reasoning);
      if (calls) message["tool_calls"] = ToolCallsJson(delta);
    } else {
      if (!delta.content.empty() || !choice.opened) message["content"] = delta.content;
      if (!delta.reasoning.empty()) message["reasoning_content"] = delta.reasoning;
      if (json calls_now = ToolCallsJson(delta); !calls_now.empty()) message["tool_calls"] = std::move(calls_now);
    }
  } else if (!fields().stream || !choice.text.empty() || !choice.opened) {
    message["content"] = choice.text;
  }
  choice.text.clear();
  json out = {{"index", index}, {fields().stream ? "delta" : "message", std::move(message)}, {"logprobs", nullptr},
              {"finish_reason", nullptr}};
  if (std::optional<ChatLogprobs>& logprobs = this->logprobs(index); logprobs) {
    for (const SampledToken& t : choice.tokens) {
      if (absl::Status status = logprobs->Add(t); !status.ok()) Fail(status);
    }
    out["logprobs"] = logprobs->TakeJson();
  }
  choice.tokens.clear();
  if (final && choice.finish && Answered(*choice.finish)) {
    const bool called = num_tool_calls(index) > 0;
    out["finish_reason"] = called && choice.finish->reason == FinishReason::kStop ? "tool_calls" : FinishReasonName(choice.finish->reason);
    out["stop_reason"] = StopReasonJson(*choice.finish);
  }
  return out;
}

}  // namespace

void HandleChatCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                           const ClientConnection& client) {
  ServeGeneration(context, request, response, client, "/v1/chat/completions",
                  [&](CallTicket ticket, const CallOrigin& origin) -> absl::StatusOr<std::shared_ptr<GenerationCall>> {
                    ARACH_ASSIGN_OR_RETURN(ChatRequest parsed, ParseChatRequest(request.body));
                    ARACH_ASSIGN_OR_RETURN(ResolvedVariant variant, ResolveRequestVariant(context, ticket, parsed.fields));
                    SetVariantHeaders(response, variant);
                    auto call = std::make_shared<ChatCall>(context, std::move(ticket), std::move(parsed), std::move(variant), origin);
                    ARACH_RETURN_IF_ERROR(call->Start());
                    return call;
                  });
}

}  // namespace arach::server::http
