#include "server/http/responses_request.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/chat_prompt.h"
#include "server/http/request_fields.h"
#include "server/json_body.h"
#include "server/reasoning_effort.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// The string at `key` of `object`, or "" where it is absent or not a string.
template <typename Json>
std::string StringAt(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->template get<std::string>() : "";
}

// The text of a message's content: a string, or a list of text parts (input_text; output_text and refusal in
// the assistant's turns, as a client sends back what it was given) joined with "\n".
absl::StatusOr<std::string> ContentText(const ordered_json& content, const std::string& field, bool assistant) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return InvalidField(field, "must be a string or a list of content parts");
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const ordered_json& part = content[j];
    const std::string at = absl::StrCat(field, "[", j, "]");
    if (!part.is_object()) return InvalidField(at, "must be a content part object");
    const std::string type = StringAt(part, "type");
    const char* text_key = type == "input_text" || (assistant && type == "output_text") ? "text"
                           : assistant && type == "refusal"                              ? "refusal"
                                                                                         : nullptr;
    if (text_key == nullptr) {
      return InvalidField(at + ".type", type.empty() ? "is required (a string)" : absl::StrCat("'", type, "' is not supported (text only: input_text",
                                                                           assistant ? ", output_text, refusal)" : ")"));
    }
    const auto value = part.find(text_key);
    if (value == part.end() || !value->is_string()) return InvalidField(absl::StrCat(at, ".", text_key), "must be a string");
    if (j > 0) text += "\n";
    text += value->get<std::string>();
  }
  return text;
}

absl::StatusOr<std::string> RequiredString(const ordered_json& item, const std::string& key, const std::string& at) {
  const auto value = item.find(key);
  if (value == item.end() || !value->is_string() || value->get<std::string>().empty()) return InvalidField(at + "." + key, "is required (a non-empty string)");
  return value->get<std::string>();
}

// The text a reasoning item carries: its reasoning_text content, else its summary's texts.
absl::StatusOr<std::string> ReasoningText(const ordered_json& item, const std::string& at) {
  std::string text;
  for (const char* key : {"content", "summary"}) {
    const auto parts = item.find(key);
    if (parts == item.end() || parts->is_null()) continue;
    if (!parts->is_array()) return InvalidField(absl::StrCat(at, ".", key), "must be a list");
    for (size_t j = 0; j < parts->size(); ++j) {
      const ordered_json& part = (*parts)[j];
      const auto part_text = part.is_object() ? part.find("text") : part.end();
      if (!part.is_object() || part_text == part.end() || !part_text->is_string()) {
        return InvalidField(absl::StrCat(at, ".", key, "[", j, "].text"), "must be a string");
      }
      if (!text.empty()) text += "\n";
      text += part_text->get<std::string>();
    }
    if (!text.empty()) break;
  }
  return text;
}

// The conversation as chat messages: `instructions` as a system message, then `input`.
class ConversationBuilder {
 public:
  absl::Status AddInstructions(const ordered_json& instructions) {
    if (instructions.is_null()) return absl::OkStatus();
    if (!instructions.is_string()) return InvalidField("instructions", "must be a string");
    messages_.push_back({{"role", "system"}, {"content", instructions.get<std::string>()}});
    return absl::OkStatus();
  }

  absl::Status AddInput(const ordered_json& input) {
    if (input.is_string()) {
      messages_.push_back({{"role", "user"}, {"content", input.get<std::string>()}});
      return absl::OkStatus();
    }
    if (!input.is_array() || input.empty()) return InvalidField("input", "is required (a string or a non-empty list of items)");
    ARACH_RETURN_IF_ERROR(AddItems(input, "input"));
    if (pending_reasoning_) return InvalidField(reasoning_at_, "a reasoning item must be followed by the assistant's message or function call");
    return absl::OkStatus();
  }

  // Items named `field`[i] in errors (a stored conversation's, then the input's).
  absl::Status AddItems(const ordered_json& items, const std::string& field) {
    for (size_t i = 0; i < items.size(); ++i) ARACH_RETURN_IF_ERROR(AddItem(items[i], absl::StrCat(field, "[", i, "]")));
    return absl::OkStatus();
  }

  ordered_json Take() { return std::move(messages_); }

 private:
  absl::Status AddItem(const ordered_json& item, const std::string& at) {
    if (!item.is_object()) return InvalidField(at, "must be an item object");
    const auto type_it = item.find("type");
    if (type_it != item.end() && !type_it->is_string()) return InvalidField(at + ".type", "must be a string");
    const std::string type = type_it == item.end() ? (item.contains("role") ? "message" : "") : type_it->get<std::string>();
    if (type == "message") return AddMessage(item, at);
    if (type == "function_call") return AddFunctionCall(item, at);
    if (type == "function_call_output") return AddFunctionCallOutput(item, at);
    if (type == "reasoning") {
      ARACH_ASSIGN_OR_RETURN(std::string text, ReasoningText(item, at));
      pending_reasoning_ = pending_reasoning_ ? absl::StrCat(*pending_reasoning_, "\n", text) : text;
      reasoning_at_ = at;
      return absl::OkStatus();
    }
    if (type == "item_reference") {
      return InvalidField(at + ".type", "'item_reference' is not supported: send the item itself, or continue a stored response with "
                                        "previous_response_id");
    }
    if (type.empty()) return InvalidField(at + ".type", "is required (message, function_call, function_call_output or reasoning)");
    return InvalidField(at + ".type", absl::StrCat("'", type, "' is not supported (message, function_call, function_call_output or reasoning)"));
  }

  absl::Status AddMessage(const ordered_json& item, const std::string& at) {
    const auto role_it = item.find("role");
    const std::string role = role_it != item.end() && role_it->is_string() ? role_it->get<std::string>() : "";
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
      return InvalidField(at + ".role", "is required: user, assistant, system or developer");
    }
    const auto content = item.find("content");
    if (content == item.end() || content->is_null()) return InvalidField(at + ".content", "is required");
    ARACH_ASSIGN_OR_RETURN(std::string text, ContentText(*content, at + ".content", role == "assistant"));
    if (role == "assistant") {
      AssistantTurn(/*for_call=*/false)["content"] = std::move(text);
      return absl::OkStatus();
    }
    if (pending_reasoning_) return InvalidField(reasoning_at_, "a reasoning item must be followed by the assistant's message or function call");
    messages_.push_back({{"role", role}, {"content", std::move(text)}});
    return absl::OkStatus();
  }

  absl::Status AddFunctionCall(const ordered_json& item, const std::string& at) {
    ARACH_ASSIGN_OR_RETURN(std::string call_id, RequiredString(item, "call_id", at));
    ARACH_ASSIGN_OR_RETURN(std::string name, RequiredString(item, "name", at));
    const auto arguments = item.find("arguments");
    if (arguments == item.end() || !arguments->is_string() || !ToolCallArguments(*arguments)) {
      return InvalidField(at + ".arguments", "is required: the JSON text of an object");
    }
    ordered_json& turn = AssistantTurn(/*for_call=*/true);
    turn["tool_calls"].push_back(
        {{"id", call_id}, {"type", "function"}, {"function", {{"name", std::move(name)}, {"arguments", arguments->get<std::string>()}}}});
    call_ids_.push_back(std::move(call_id));
    return absl::OkStatus();
  }

  absl::Status AddFunctionCallOutput(const ordered_json& item, const std::string& at) {
    ARACH_ASSIGN_OR_RETURN(std::string call_id, RequiredString(item, "call_id", at));
    if (std::find(call_ids_.begin(), call_ids_.end(), call_id) == call_ids_.end()) {
      return InvalidField(at + ".call_id", absl::StrCat("'", call_id, "' answers no function_call before it in input"));
    }
    const auto output = item.find("output");
    if (output == item.end() || output->is_null()) return InvalidField(at + ".output", "is required");
    if (pending_reasoning_) return InvalidField(reasoning_at_, "a reasoning item must be followed by the assistant's message or function call");
    ARACH_ASSIGN_OR_RETURN(std::string text, ContentText(*output, at + ".output", /*assistant=*/false));
    messages_.push_back({{"role", "tool"}, {"tool_call_id", std::move(call_id)}, {"content", std::move(text)}});
    return absl::OkStatus();
  }

  // The assistant turn that an assistant message or function call goes into: a message starts one; a call joins
  // the assistant turn just before it (its message's text, or the calls before it), else starts one. A reasoning
  // item before it becomes the turn's reasoning_content (as the chat templates of reasoning models read it).
  ordered_json& AssistantTurn(bool for_call) {
    const bool reuse = for_call && !messages_.empty() && messages_.back()["role"] == "assistant" && !pending_reasoning_;
    if (!reuse) {
      messages_.push_back({{"role", "assistant"}, {"content", nullptr}});
      if (pending_reasoning_) messages_.back()["reasoning_content"] = std::move(*pending_reasoning_);
      pending_reasoning_.reset();
    }
    ordered_json& turn = messages_.back();
    if (for_call && !turn.contains("tool_calls")) turn["tool_calls"] = ordered_json::array();
    return turn;
  }

  ordered_json messages_ = ordered_json::array();
  std::vector<std::string> call_ids_;
  std::optional<std::string> pending_reasoning_;
  std::string reasoning_at_;
};

// The Responses API's flat function tools (validated by ParseTools) in chat's shape, as a chat template
// expects them: {"type": "function", "function": {...the tool's other fields, in the caller's order...}}.
ordered_json ChatShapedTools(const ordered_json& tools) {
  ordered_json chat = ordered_json::array();
  for (const ordered_json& tool : tools) {
    ordered_json function = ordered_json::object();
    for (const auto& [key, value] : tool.items()) {
      if (key != "type") function[key] = value;
    }
    chat.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return chat;
}

absl::Status CheckStreamOptions(const json& body) {
  const auto options = body.find("stream_options");
  if (options == body.end() || options->is_null()) return absl::OkStatus();
  if (!options->is_object()) return InvalidField("stream_options", "must be an object");
  if (const auto stream = body.find("stream"); stream == body.end() || *stream != true) return InvalidField("stream_options", "is only allowed when stream is true");
  for (const auto& [key, value] : options->items()) {
    if (key != "include_obfuscation") return KeyError("stream_options", key, "is not a known parameter");
    ARACH_RETURN_IF_ERROR(OptionalBoolAt(*options, key, "stream_options.include_obfuscation").status());
  }
  return absl::OkStatus();  // (no obfuscation padding is ever sent)
}

// `include` (of what OpenAI can include, message.output_text.logprobs: the message's tokens with their log-probs)
// and `top_logprobs` (0..20 alternatives per token, with that include; 0 asks for nothing) into `fields`.
absl::Status ReadLogprobs(const json& body, GenerationFields& fields) {
  constexpr absl::string_view kLogprobs = "message.output_text.logprobs";
  bool logprobs = false;
  if (const auto include = body.find("include"); include != body.end() && !include->is_null()) {
    if (!include->is_array()) return InvalidField("include", "must be a list of strings");
    for (size_t i = 0; i < include->size(); ++i) {
      const json& value = (*include)[i];
      const std::string at = absl::StrCat("include[", i, "]");
      if (!value.is_string()) return InvalidField(at, "must be a string");
      if (value.get<std::string>() != kLogprobs) {
        return InvalidField(at, absl::StrCat("'", ClipForError(value.get<std::string>(), 80), "' is not supported (only ", kLogprobs, ")"));
      }
      logprobs = true;
    }
  }
  std::optional<int> top;
  if (const auto it = body.find("top_logprobs"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > SamplingParams::kMaxTopLogprobs) {
      return InvalidField("top_logprobs", absl::StrCat("must be an integer in [0, ", SamplingParams::kMaxTopLogprobs, "]"));
    }
    if (!logprobs && it->get<int64_t>() > 0) return InvalidField("top_logprobs", absl::StrCat("needs include [\"", kLogprobs, "\"] (the log-probs it adds to)"));
    top = static_cast<int>(it->get<int64_t>());
  }
  if (logprobs) {
    fields.logprobs = top.value_or(0);
    fields.sampling.logprobs = true;
    fields.sampling.top_logprobs = *fields.logprobs;
  }
  return absl::OkStatus();
}

json Given(const json& body, const char* key, json otherwise) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? otherwise : *it;
}

// `reasoning` ({"effort", "summary"}; OpenAI's older `generate_summary` for summary) into `chat` and the answer's
// echo of it. No summaries are written here: a summary asked for leaves the reasoning item's summary empty (its
// text is in its content).
absl::StatusOr<json> ReadReasoning(const json& body, ChatRequest& chat) {
  const json reasoning = Given(body, "reasoning", json::object());
  if (!reasoning.is_object()) return InvalidField("reasoning", "must be an object ({\"effort\", \"summary\"})");
  json summary = nullptr;
  for (const auto& [key, value] : reasoning.items()) {
    const std::string at = absl::StrCat("reasoning.", key);
    if (key == "effort") {
      ARACH_ASSIGN_OR_RETURN(chat.reasoning_effort, ReadReasoningEffort(value, at));
      chat.reasoning_effort_field = at;
    } else if (key == "summary" || key == "generate_summary") {
      if (!value.is_null() && value != "auto" && value != "concise" && value != "detailed") {
        return InvalidField(at, "must be auto, concise or detailed");
      }
      if (!value.is_null()) summary = value;
    } else {
      return KeyError("reasoning", key, "is not a known parameter (effort, summary)");
    }
  }
  return json{{"effort", chat.reasoning_effort ? json(*chat.reasoning_effort) : json(nullptr)}, {"summary", summary}};
}

}  // namespace

absl::StatusOr<ResponsesRequest> ParseResponseInputTokensRequest(const std::string& body_text, const StoredConversation& stored) {
  static constexpr const char* kShapesThePrompt[] = {"model",     "input",     "instructions",         "tools",
                                                     "tool_choice", "parallel_tool_calls", "previous_response_id",
                                                     "reasoning", "text",      "truncation",           "conversation",
                                                     "chat_template_kwargs"};
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kShapesThePrompt), std::end(kShapesThePrompt), key) == std::end(kShapesThePrompt)) {
      return KeyError("", key, "is not a parameter of input_tokens (only those that shape the prompt)");
    }
  }
  return ParseResponsesRequest(body_text, stored);
}

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(const std::string& body_text, const StoredConversation& stored) {
  ARACH_ASSIGN_OR_RETURN(const ordered_json body, ParseOrderedJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_ASSIGN_OR_RETURN(json plain, ParseJson(body_text, "body"));  // the same body, for the shared fields
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(plain, OpenAiRoute::kResponses));
  ARACH_RETURN_IF_ERROR(CheckStreamOptions(plain));
  ResponsesRequest request;
  ChatRequest& chat = request.chat;
  json shared = plain;
  shared.erase("stream_options");  // (the Responses API's own; chat's are read by ParseGenerationFields)
  shared.erase("top_logprobs");    // (read with include, not with chat's logprobs flag)
  ARACH_ASSIGN_OR_RETURN(chat.fields, ParseGenerationFields(shared, {"max_output_tokens"}));
  ARACH_RETURN_IF_ERROR(ReadLogprobs(plain, chat.fields));
  if (const auto text = plain.find("text"); text != plain.end() && !text->is_null()) {
    if (!text->is_object()) return InvalidField("text", "must be an object");
    for (const auto& [key, value] : text->items()) {
      if (key == "verbosity" && !value.is_null() && value != "medium") return InvalidField("text.verbosity", "is not supported");
      if (key != "format" && key != "verbosity") return KeyError("text", key, "is not a known parameter");
    }
    ARACH_ASSIGN_OR_RETURN(chat.fields.structured_output, ParseTextFormat(text->value("format", json()), "text.format"));
  }
  const json truncation = Given(plain, "truncation", "disabled");
  if (truncation != "disabled" && truncation != "auto") {
    return InvalidField("truncation", "must be \"disabled\" (a conversation longer than the context is refused) or \"auto\" (its "
                                      "oldest exchanges are dropped until it fits)");
  }
  chat.drop_oldest_exchanges_to_fit = truncation == "auto";

  ConversationBuilder conversation;
  ARACH_RETURN_IF_ERROR(conversation.AddInstructions(body.value("instructions", ordered_json())));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> store, OptionalBoolAt(plain, "store"));
  request.store = store.value_or(true);
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> background, OptionalBoolAt(plain, "background"));
  request.background = background.value_or(false);
  if (request.background && !request.store) return InvalidField("background", "needs store: true (its answer is fetched from the store)");
  if (const auto previous = plain.find("previous_response_id"); previous != plain.end() && !previous->is_null()) {
    if (!previous->is_string() || previous->get<std::string>().empty()) return InvalidField("previous_response_id", "must be a response id");
    request.previous_response_id = previous->get<std::string>();
    if (!stored) {
      return InvalidField("previous_response_id", "is not supported: responses are not stored here (--responses_store_bytes is 0); "
                                                  "send the whole conversation in input");
    }
    absl::StatusOr<ordered_json> items = stored(*request.previous_response_id);
    if (absl::IsNotFound(items.status())) {
      return InvalidField("previous_response_id", absl::StrCat("'", ClipForError(*request.previous_response_id, 80),
                                                               "' was not found (stored responses are kept per key and per "
                                                               "replica, and the oldest are dropped for room)"));
    }
    if (!items.ok()) return items.status();
    ARACH_RETURN_IF_ERROR(conversation.AddItems(*items, "previous_response_id"));
    request.conversation = std::move(*items);
  }
  const auto input = body.find("input");
  if (input == body.end() || input->is_null()) return InvalidField("input", "is required (a string or a non-empty list of items)");
  ARACH_RETURN_IF_ERROR(conversation.AddInput(*input));
  request.input_start = request.conversation.size();
  if (input->is_string()) {
    request.conversation.push_back({{"type", "message"}, {"role", "user"}, {"content", *input}});
  } else {
    for (const ordered_json& item : *input) request.conversation.push_back(item);
  }
  chat.input.messages = conversation.Take();

  ARACH_ASSIGN_OR_RETURN(chat.tools, ParseTools(plain.value("tools", json()), "tools", ToolShape::kFlat));
  if (!chat.tools.empty()) chat.input.tools = ChatShapedTools(body.at("tools"));
  ARACH_ASSIGN_OR_RETURN(chat.tool_choice, ParseToolChoice(plain.value("tool_choice", json()), chat.tools, "tool_choice", ToolShape::kFlat));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> parallel, OptionalBoolAt(plain, "parallel_tool_calls"));
  chat.parallel_tool_calls = parallel.value_or(true);
  ARACH_RETURN_IF_ERROR(ReadChatTemplateKwargs(body, chat.input));
  ARACH_ASSIGN_OR_RETURN(json reasoning, ReadReasoning(plain, chat));
  if (const json metadata = Given(plain, "metadata", json::object()); !metadata.is_object()) return InvalidField("metadata", "must be an object");
  // OpenAI's bound on calls to its built-in tools (web search, file search, ...): this server has none, so a valid
  // bound holds whatever the model writes; function calls are bounded by parallel_tool_calls.
  const json max_tool_calls = Given(plain, "max_tool_calls", nullptr);
  if (!max_tool_calls.is_null() && (!max_tool_calls.is_number_integer() || max_tool_calls.get<int64_t>() < 0)) {
    return InvalidField("max_tool_calls", "must be an integer >= 0 (it bounds calls to built-in tools, of which this "
                                          "server has none)");
  }
  request.echo = {{"instructions", Given(plain, "instructions", nullptr)},
                  {"max_output_tokens", Given(plain, "max_output_tokens", nullptr)},
                  {"max_tool_calls", max_tool_calls},
                  {"metadata", Given(plain, "metadata", json::object())},
                  {"parallel_tool_calls", chat.parallel_tool_calls},
                  {"reasoning", std::move(reasoning)},
                  {"temperature", Given(plain, "temperature", 1.0)},
                  {"text", {{"format", Given(plain.value("text", json::object()), "format", {{"type", "text"}})}}},
                  {"tool_choice", Given(plain, "tool_choice", "auto")},
                  {"tools", Given(plain, "tools", json::array())},
                  {"top_logprobs", Given(plain, "top_logprobs", 0)},
                  {"top_p", Given(plain, "top_p", 1.0)},
                  {"truncation", truncation},
                  {"user", Given(plain, "user", nullptr)},
                  {"previous_response_id", Given(plain, "previous_response_id", nullptr)}};
  return request;
}

}  // namespace arach::server::http
