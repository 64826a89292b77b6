// The Responses API's pieces without a server: a /v1/responses body read as the chat turn it asks for (every
// error naming the Responses API's own parameter), a retrieval's query, and the output items with the stream events that build them
// (the events, accumulated the way OpenAI's clients do, give the items of the whole answer).
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/http/input_items.h"
#include "server/http/openai_error.h"
#include "server/http/response_output.h"
#include "server/http/response_retrieval.h"
#include "server/http/responses_request.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

std::string ParamOf(const std::string& body) {
  const absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(body);
  if (parsed.ok()) return "<ok>";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  return ErrorParam(parsed.status());
}

TEST(ResponsesRequest, BackgroundIsReadWithTheStore) {
  auto background = ParseResponsesRequest(R"({"model": "m", "input": "Hi", "background": true})");
  ASSERT_TRUE(background.ok()) << background.status();
  EXPECT_TRUE(background->background);
  EXPECT_TRUE(background->store);
  auto foreground = ParseResponsesRequest(R"({"model": "m", "input": "Hi", "background": false, "store": false})");
  ASSERT_TRUE(foreground.ok()) << foreground.status();
  EXPECT_FALSE(foreground->background);
  auto streamed = ParseResponsesRequest(R"({"model": "m", "input": "Hi", "background": true, "stream": true})");
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_TRUE(streamed->background);
  EXPECT_TRUE(streamed->chat.fields.stream);
}

// POST /v1/responses/input_tokens takes the parameters that shape the prompt, read as a response's are; others are
// refused naming them.
TEST(ResponseInputTokens, TakesWhatShapesThePromptOnly) {
  auto counted = ParseResponseInputTokensRequest(
      R"({"model": "m", "instructions": "Be brief.", "input": "Hi", "tools": [{"type": "function", "name": "f"}],
          "tool_choice": "auto", "parallel_tool_calls": false, "reasoning": {"effort": "low"}, "text": {"format": {"type": "text"}},
          "truncation": "auto", "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(counted->chat.input.messages, ordered_json::parse(R"([{"role": "system", "content": "Be brief."},
                                                                  {"role": "user", "content": "Hi"}])"));
  EXPECT_TRUE(counted->chat.drop_oldest_exchanges_to_fit);
  EXPECT_EQ(counted->chat.tools.size(), 1u);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"model": "m", "input": "x", "max_output_tokens": 5})", "max_output_tokens"},
      {R"({"model": "m", "input": "x", "stream": true})", "stream"},
      {R"({"model": "m", "input": "x", "store": false})", "store"},
      {R"({"model": "m", "input": "x", "temperature": 0})", "temperature"},
      {R"({"model": "m", "input": "x", "tool_choice": "sometimes"})", "tool_choice"},  // (read as a response's)
      {R"({"model": "m", "input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},  // (nothing stored)
      {R"(["model"])", "body"},
      {R"({"model": "m", "input": "x", "a: b": 1})", "body"},  // (a key that is no name: the body is named)
      {R"({"model": "m", "input": "x")", "body"},
  };
  for (const auto& [body, param] : refused) {
    const absl::StatusOr<ResponsesRequest> parsed = ParseResponseInputTokensRequest(body);
    ASSERT_FALSE(parsed.ok()) << body;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ErrorParam(parsed.status()), param) << parsed.status();
  }
}

// GET /v1/responses/{id}'s query: stream and starting_after, nothing else.
TEST(ResponseRetrieval, ReadsStreamAndStartingAfterAndNamesWhatItRefuses) {
  const auto parse = [](httplib::Params query) { return ParseResponseRetrieval(query); };
  absl::StatusOr<ResponseRetrieval> plain = parse({});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->stream);
  absl::StatusOr<ResponseRetrieval> streamed = parse({{"stream", "true"}});
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_TRUE(streamed->stream);
  EXPECT_EQ(streamed->first_event, 0u);
  absl::StatusOr<ResponseRetrieval> after = parse({{"starting_after", "6"}, {"stream", "true"}});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->first_event, 7u) << "the event after sequence number 6";
  absl::StatusOr<ResponseRetrieval> not_streamed = parse({{"stream", "false"}});
  ASSERT_TRUE(not_streamed.ok()) << not_streamed.status();
  EXPECT_FALSE(not_streamed->stream);
  const std::vector<std::pair<httplib::Params, std::string>> refused = {
      {{{"stream", "yes"}}, "stream"},
      {{{"stream", "true"}, {"stream", "true"}}, "stream"},
      {{{"starting_after", "3"}}, "starting_after"},  // (without stream)
      {{{"stream", "false"}, {"starting_after", "3"}}, "starting_after"},
      {{{"stream", "true"}, {"starting_after", "-1"}}, "starting_after"},
      {{{"stream", "true"}, {"starting_after", "2.5"}}, "starting_after"},
      {{{"stream", "true"}, {"starting_after", "99999999999999999999"}}, "starting_after"},
      {{{"include[]", "message.output_text.logprobs"}}, "include"},
      {{{"limit", "3"}}, "limit"},
      {{{"{\"a\": 1}", ""}}, "query"},  // (a key that is no name: the query is named)
  };
  for (const auto& [query, param] : refused) {
    const absl::StatusOr<ResponseRetrieval> parsed = parse(query);
    ASSERT_FALSE(parsed.ok()) << param;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ErrorParam(parsed.status()), param) << parsed.status();
  }
}

TEST(ResponsesRequest, AStringInputIsOneUserTurnAfterTheInstructions) {
  auto parsed = ParseResponsesRequest(
      R"({"model": "m", "instructions": "Be brief.", "input": "Hi", "max_output_tokens": 7, "temperature": 0.5, "user": "u1"})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->chat.input.messages, ordered_json::parse(R"([{"role": "system", "content": "Be brief."},
                                                                {"role": "user", "content": "Hi"}])"));
  EXPECT_EQ(parsed->chat.fields.sampling.max_tokens, 7);
  EXPECT_TRUE(parsed->chat.fields.max_tokens_given);
  EXPECT_FLOAT_EQ(parsed->chat.fields.sampling.temperature, 0.5f);
  EXPECT_EQ(parsed->chat.fields.variant.experiment_key, "u1");
  EXPECT_EQ(parsed->chat.fields.n, 1);
  auto salted = ParseResponsesRequest(R"({"model": "m", "input": "Hi", "cache_salt": "tenant salt"})");
  ASSERT_TRUE(salted.ok()) << salted.status();
  EXPECT_EQ(salted->chat.fields.cache_salt, "tenant salt");
  EXPECT_EQ(parsed->echo["instructions"], "Be brief.");
  EXPECT_EQ(parsed->echo["max_output_tokens"], 7);
  EXPECT_EQ(parsed->echo["tools"], json::array());
  EXPECT_EQ(parsed->echo["text"], json::parse(R"({"format": {"type": "text"}})"));
  EXPECT_EQ(parsed->chat.tool_choice.mode, ToolChoice::Mode::kNone) << "no tools: no calls";
}

// previous_response_id: the stored conversation comes first (a function call in it answered by the new input), the
// instructions stay this request's own, and the request's conversation is the stored one then its input; an
// unknown id, or one where nothing is stored, is refused naming the parameter.
TEST(ResponsesRequest, APreviousResponsesConversationComesFirst) {
  const ordered_json stored_items = ordered_json::parse(R"([
      {"type": "message", "role": "user", "content": "Weather?"},
      {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": "{}", "status": "completed"}])");
  std::string asked;
  const StoredConversation stored = [&](const std::string& id) -> absl::StatusOr<ordered_json> {
    asked = id;
    if (id != "resp_1") return absl::NotFoundError(id);
    return stored_items;
  };
  auto parsed = ParseResponsesRequest(R"({"model": "m", "instructions": "Be brief.", "previous_response_id": "resp_1",
      "input": [{"type": "function_call_output", "call_id": "call_a", "output": "sunny"}], "store": false})", stored);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(asked, "resp_1");
  EXPECT_EQ(parsed->previous_response_id, "resp_1");
  EXPECT_FALSE(parsed->store);
  EXPECT_EQ(parsed->echo["previous_response_id"], "resp_1");
  EXPECT_EQ(parsed->chat.input.messages, ordered_json::parse(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_a", "content": "sunny"}])"));
  ASSERT_EQ(parsed->conversation.size(), 3u);
  EXPECT_EQ(parsed->conversation[2]["type"], "function_call_output");
  auto plain = ParseResponsesRequest(R"({"model": "m", "input": "Hi"})", stored);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->store) << "OpenAI's default";
  EXPECT_EQ(plain->conversation, ordered_json::parse(R"([{"type": "message", "role": "user", "content": "Hi"}])"));
  for (const StoredConversation& lookup : {stored, StoredConversation()}) {
    auto unknown = ParseResponsesRequest(R"({"model": "m", "previous_response_id": "resp_2", "input": "x"})", lookup);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(ErrorParam(unknown.status()), "previous_response_id") << unknown.status();
  }
  EXPECT_EQ(ParamOf(R"({"model": "m", "input": "x", "store": "yes"})"), "store");
}

TEST(ResponsesRequest, ItemsBecomeTheChatConversation) {
  // What a client sends back after a turn that reasoned, said something and called two functions.
  auto parsed = ParseResponsesRequest(R"({"model": "m", "input": [
      {"role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}, {"type": "input_text", "text": "Now."}]},
      {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Need the tool."}]},
      {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": "{\"city\": \"Paris\"}"},
      {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
      {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "noon"}]},
      {"role": "user", "content": "Thanks"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->chat.input.messages, ordered_json::parse(R"([
      {"role": "developer", "content": "Use tools."},
      {"role": "user", "content": "Weather?\nNow."},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "Need the tool.", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
      {"role": "tool", "tool_call_id": "call_b", "content": "noon"},
      {"role": "user", "content": "Thanks"}])"));
}

TEST(ResponsesRequest, FlatFunctionToolsChoiceAndTextFormat) {
  auto parsed = ParseResponsesRequest(R"({"model": "m", "input": "x", "parallel_tool_calls": false,
      "tools": [{"type": "function", "name": "weather", "description": "d", "parameters": {"type": "object"}, "strict": true}],
      "tool_choice": {"type": "function", "name": "weather"},
      "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": true}}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->chat.tools.size(), 1u);
  EXPECT_EQ(parsed->chat.tools[0].name, "weather");
  EXPECT_EQ(parsed->chat.input.tools, ordered_json::parse(R"([{"type": "function", "function":
      {"name": "weather", "description": "d", "parameters": {"type": "object"}, "strict": true}}])"))
      << "the template sees chat's shape";
  EXPECT_EQ(parsed->chat.tool_choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(parsed->chat.tool_choice.name, "weather");
  EXPECT_FALSE(parsed->chat.parallel_tool_calls);
  EXPECT_EQ(parsed->chat.fields.structured_output.constraint.kind, OutputConstraint::Kind::kJsonSchema);
  EXPECT_TRUE(parsed->chat.fields.structured_output.constraint.strict);
  EXPECT_EQ(parsed->chat.fields.structured_output.field, "text.format.schema");
  EXPECT_EQ(parsed->echo["tool_choice"], json::parse(R"({"type": "function", "name": "weather"})"));

  auto none = ParseResponsesRequest(R"({"model": "m", "input": "x", "tool_choice": "none",
      "tools": [{"type": "function", "name": "weather"}]})");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->chat.tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_EQ(none->chat.input.tools.dump(), R"([{"type":"function","function":{"name":"weather"}}])")
      << "the tools reach the template in chat's shape, tool_choice none or not";
  auto object = ParseResponsesRequest(R"({"model": "m", "input": "x", "text": {"format": {"type": "json_object"}}})");
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(object->chat.fields.structured_output.constraint.kind, OutputConstraint::Kind::kJsonObject);
}

TEST(ResponsesRequest, IncludeAsksForTheMessagesLogprobs) {
  auto parsed = ParseResponsesRequest(
      R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 3})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->chat.fields.logprobs, 3);
  EXPECT_TRUE(parsed->chat.fields.sampling.logprobs);
  EXPECT_EQ(parsed->chat.fields.sampling.top_logprobs, 3);
  EXPECT_EQ(parsed->echo["top_logprobs"], 3);
  auto without_top = ParseResponsesRequest(R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs"]})");
  ASSERT_TRUE(without_top.ok()) << without_top.status();
  EXPECT_EQ(without_top->chat.fields.logprobs, 0);
  EXPECT_TRUE(without_top->chat.fields.sampling.logprobs);
  auto none = ParseResponsesRequest(R"({"model": "m", "input": "x", "top_logprobs": 0})");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->chat.fields.logprobs.has_value());
  EXPECT_FALSE(none->chat.fields.sampling.logprobs);
}

TEST(ResponsesRequest, ClientsDefaultsAskForNothing) {
  EXPECT_EQ(ParamOf(R"({"model": "m", "input": "x", "store": true, "background": false, "include": [], "truncation": "disabled",
      "reasoning": {"effort": null, "summary": null}, "metadata": {"k": "v"}, "service_tier": "auto", "stream": true,
      "stream_options": {"include_obfuscation": false}, "text": {"format": {"type": "text"}, "verbosity": "medium"}})"),
            "<ok>");
}

// reasoning.effort is the chat turn's reasoning effort (set where the template is known: reasoning_effort_test),
// its errors naming reasoning.effort; the answer repeats reasoning (no summaries are written here).
TEST(ResponsesRequest, ReasoningGivesTheEffortAndIsRepeated) {
  auto parsed = ParseResponsesRequest(R"({"model": "m", "input": "x", "reasoning": {"effort": "low", "summary": "auto"}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->chat.reasoning_effort, "low");
  EXPECT_EQ(parsed->chat.reasoning_effort_field, "reasoning.effort");
  EXPECT_EQ(parsed->echo["reasoning"], (json{{"effort", "low"}, {"summary", "auto"}}));
  auto none = ParseResponsesRequest(R"({"model": "m", "input": "x"})");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->chat.reasoning_effort, std::nullopt);
  EXPECT_EQ(none->echo["reasoning"], (json{{"effort", nullptr}, {"summary", nullptr}}));
}

// truncation "auto" lets the turn drop the conversation's oldest exchanges to fit (server/chat_prompt_fit.h);
// "disabled" (the default) does not. The response repeats it.
TEST(ResponsesRequest, TruncationAutoLetsTheTurnDropItsOldestExchanges) {
  auto automatic = ParseResponsesRequest(R"({"model": "m", "input": "x", "truncation": "auto"})");
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_TRUE(automatic->chat.drop_oldest_exchanges_to_fit);
  EXPECT_EQ(automatic->echo["truncation"], "auto");
  auto standard = ParseResponsesRequest(R"({"model": "m", "input": "x"})");
  ASSERT_TRUE(standard.ok()) << standard.status();
  EXPECT_FALSE(standard->chat.drop_oldest_exchanges_to_fit);
  EXPECT_EQ(standard->echo["truncation"], "disabled");
}

// max_tool_calls bounds calls to OpenAI's built-in tools (web search, file search, ...): there are none here, so any
// bound is met; the response repeats it (null when not given), as OpenAI's does.
TEST(ResponsesRequest, MaxToolCallsIsAcceptedAndRepeated) {
  auto parsed = ParseResponsesRequest(R"({"model": "m", "input": "x", "max_tool_calls": 2,
      "tools": [{"type": "function", "name": "weather"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->echo["max_tool_calls"], 2);
  ASSERT_EQ(parsed->chat.tools.size(), 1u);
  EXPECT_TRUE(parsed->chat.parallel_tool_calls) << "function calls are bounded by parallel_tool_calls, not by it";
  auto without = ParseResponsesRequest(R"({"model": "m", "input": "x"})");
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(without->echo.contains("max_tool_calls"));
  EXPECT_TRUE(without->echo["max_tool_calls"].is_null());
}

TEST(ResponsesRequest, EveryBadFieldIsNamedInTheResponsesApisTerms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": "x"})", "model"},
      {R"({"model": "m"})", "input"},
      {R"({"model": "m", "input": []})", "input"},
      {R"({"model": "m", "input": "x", "instructions": 3})", "instructions"},
      {R"({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})", "input[0].content[0].type"},
      {R"({"model": "m", "input": [{"role": "user", "content": [{"type": "output_text", "text": "t"}]}]})", "input[0].content[0].type"},
      {R"({"model": "m", "input": [{"role": "tool", "content": "t"}]})", "input[0].role"},
      {R"({"model": "m", "input": [{"role": "user"}]})", "input[0].content"},
      {R"({"model": "m", "input": [{"content": "t"}]})", "input[0].type"},
      {R"({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type"},
      {R"({"model": "m", "input": [{"type": "web_search_call"}]})", "input[0].type"},
      {R"({"model": "m", "input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]})", "input[0].name"},
      {R"({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]})", "input[0].arguments"},
      {R"({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]})", "input[0].arguments"},
      {R"({"model": "m", "input": [{"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "c", "output": "o"}]})",
       "input[1].call_id"},
      {R"({"model": "m", "input": [{"role": "user", "content": "q"}, {"type": "reasoning", "summary": []}]})", "input[1]"},
      {R"({"model": "m", "input": [{"type": "reasoning", "content": [{"type": "reasoning_text"}]}]})", "input[0].content[0].text"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "bad name"}]})", "tools[0].name"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": "array"}}]})",
       "tools[0].parameters.type"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice.name"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "allowed_tools"}})",
       "tool_choice.type"},
      {R"({"model": "m", "input": "x", "tool_choice": "required"})", "tool_choice"},
      {R"({"model": "m", "input": "x", "parallel_tool_calls": "yes"})", "parallel_tool_calls"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "schema": {}}}})", "text.format.name"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": 3}}})", "text.format.schema"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type"},
      {R"({"model": "m", "input": "x", "text": {"verbosity": "low"}})", "text.verbosity"},
      {R"({"model": "m", "input": "x", "max_output_tokens": "9"})", "max_output_tokens"},
      {R"({"model": "m", "input": "x", "truncation": "middle"})", "truncation"},
      {R"({"model": "m", "input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"model": "m", "input": "x", "conversation": "conv_1"})", "conversation"},
      {R"({"model": "m", "input": "x", "background": true, "store": false})", "background"},  // (nothing to poll)
      {R"({"model": "m", "input": "x", "background": "yes"})", "background"},
      {R"({"model": "m", "input": "x", "include": ["reasoning.encrypted_content"]})", "include[0]"},
      {R"({"model": "m", "input": "x", "include": "message.output_text.logprobs"})", "include"},
      {R"({"model": "m", "input": "x", "include": [3]})", "include[0]"},
      {R"({"model": "m", "input": "x", "top_logprobs": 2})", "top_logprobs"},
      {R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 21})", "top_logprobs"},
      {R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 1.5})", "top_logprobs"},
      {R"({"model": "m", "input": "x", "reasoning": {"effort": "max"}})", "reasoning.effort"},
      {R"({"model": "m", "input": "x", "reasoning": {"summary": "short"}})", "reasoning.summary"},
      {R"({"model": "m", "input": "x", "reasoning": {"budget": 100}})", "reasoning.budget"},
      {R"({"model": "m", "input": "x", "reasoning": {"a,b": 1}})", "reasoning"},
      {R"({"model": "m", "input": "x", "reasoning": "high"})", "reasoning"},
      {R"({"model": "m", "input": "x", "max_tool_calls": -1})", "max_tool_calls"},
      {R"({"model": "m", "input": "x", "max_tool_calls": "2"})", "max_tool_calls"},
      {R"({"model": "m", "input": "x", "max_tool_calls": 1.5})", "max_tool_calls"},
      {R"({"model": "m", "input": "x", "n": 2})", "n"},
      {R"({"model": "m", "input": "x", "max_tokens": 2})", "max_tokens"},
      {R"({"model": "m", "input": "x", "messages": []})", "messages"},
      {R"({"model": "m", "input": "x", "frobnicate": 1})", "frobnicate"},
      {R"({"model": "m", "input": "x", "stream": true, "stream_options": {"include_usage": true}})", "stream_options.include_usage"},
      {R"({"model": "m", "input": "x", "stream_options": {"include_obfuscation": true}})", "stream_options"},
      {R"({"model": "m", "input": "x", "metadata": []})", "metadata"},
      {R"({"model": "m", "input": "x", "chat_template_kwargs": {"messages": []}})", "chat_template_kwargs"},
  };
  for (const auto& [body, param] : cases) EXPECT_EQ(ParamOf(body), param) << body;
  // Chat's own parameters are told apart from unknown ones.
  auto n = ParseResponsesRequest(R"({"model": "m", "input": "x", "n": 2})");
  EXPECT_NE(n.status().message().find("not a parameter of /v1/responses"), std::string::npos) << n.status();
}

// The response as OpenAI's clients build it from a stream's events (openai-node's ResponseStream, extended to
// reasoning items), checking that each event places itself at an item and a content part that exist.
class StreamAccumulator {
 public:
  void Apply(const json& event) {
    const std::string type = event["type"];
    if (type == "response.output_item.added") {
      ASSERT_EQ(event["output_index"], output_.size()) << event;
      output_.push_back(event["item"]);
      return;
    }
    ASSERT_LT(event["output_index"].get<size_t>(), output_.size()) << event;
    json& item = output_[event["output_index"].get<size_t>()];
    if (event.contains("item_id")) {
      ASSERT_EQ(event["item_id"], item["id"]) << event;
    }
    if (type == "response.content_part.added") {
      item["content"].push_back(event["part"]);
    } else if (type == "response.output_text.delta" || type == "response.reasoning_text.delta") {
      ASSERT_LT(event["content_index"].get<size_t>(), item["content"].size()) << event;
      json& part = item["content"][event["content_index"].get<size_t>()];
      ASSERT_EQ(part["type"], type == "response.output_text.delta" ? "output_text" : "reasoning_text") << event;
      part["text"] = part["text"].get<std::string>() + event["delta"].get<std::string>();
      if (part["type"] == "output_text") {
        for (const json& entry : event["logprobs"]) part["logprobs"].push_back(entry);
      }
    } else if (type == "response.function_call_arguments.delta") {
      item["arguments"] = item["arguments"].get<std::string>() + event["delta"].get<std::string>();
    } else if (type == "response.output_text.done" || type == "response.reasoning_text.done") {
      const json& part = item["content"][event["content_index"].get<size_t>()];
      EXPECT_EQ(event["text"], part["text"]) << event;
      if (type == "response.output_text.done") {
        EXPECT_EQ(event["logprobs"], part["logprobs"]) << event;
      }
    } else if (type == "response.function_call_arguments.done") {
      EXPECT_EQ(event["arguments"], item["arguments"]) << event;
    } else if (type == "response.output_item.done") {
      json expected = item;
      expected["status"] = event["item"]["status"];
      EXPECT_EQ(event["item"], expected) << "an item's done event repeats what its events built";
      item = event["item"];
    } else if (type != "response.content_part.done") {
      ADD_FAILURE() << "unexpected event " << event;
    }
  }
  const json& output() const { return output_; }

 private:
  json output_ = json::array();
};

std::vector<json> Concat(std::vector<json> a, const std::vector<json>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ResponseOutput, StreamedEventsAssembleToTheItems) {
  ResponseOutput output("abc", ToolCallSyntax::kHermes);
  StreamAccumulator stream;
  std::vector<json> events;
  ChatOutputDelta d1;
  d1.reasoning = "Think";
  ChatOutputDelta d2;
  d2.reasoning = "ing.";
  d2.content = "Let me ";
  ChatOutputDelta d3;
  d3.content = "check.";
  d3.tool_calls = {{0, "weather", R"({"city":)", false}};  // a call streams: its arguments come in pieces
  ChatOutputDelta d3b;
  d3b.tool_calls = {{0, "", R"( "Paris"})", true}, {1, "time", "{}", true}};
  ChatOutputDelta d4;
  d4.content = "Done";
  for (const ChatOutputDelta& d : {d1, d2, d3, d3b, d4}) events = Concat(events, output.Add(d));
  int argument_deltas = 0;
  for (const json& e : events) argument_deltas += e["type"] == "response.function_call_arguments.delta";
  EXPECT_EQ(argument_deltas, 3) << "one per piece";
  events = Concat(events, output.Finish(/*incomplete=*/false));
  for (const json& e : events) stream.Apply(e);
  const json& items = output.items();
  EXPECT_EQ(stream.output(), items);
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0]["type"], "reasoning");
  EXPECT_EQ(items[0]["content"][0]["text"], "Thinking.");
  EXPECT_EQ(items[1]["type"], "message");
  EXPECT_EQ(items[1]["content"][0]["text"], "Let me check.");
  EXPECT_EQ(items[1]["status"], "completed");
  EXPECT_EQ(items[2]["type"], "function_call");
  EXPECT_EQ(items[2]["name"], "weather");
  EXPECT_EQ(items[2]["arguments"], R"({"city": "Paris"})");
  EXPECT_EQ(items[2]["status"], "completed");
  EXPECT_EQ(items[3]["name"], "time");
  EXPECT_NE(items[2]["call_id"], items[3]["call_id"]);
  EXPECT_EQ(items[4]["content"][0]["text"], "Done") << "content after a call is a message of its own";
  EXPECT_EQ(output.reasoning(), "Thinking.");
  std::vector<std::string> ids;
  for (const json& item : items) ids.push_back(item["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"rs_abc_0", "msg_abc_1", "fc_abc_2", "fc_abc_3", "msg_abc_4"}));
}

// A call cut off inside its arguments (max_output_tokens) never ends: the turn's end closes it as incomplete.
TEST(ResponseOutput, ACallCutOffIsIncomplete) {
  ResponseOutput output("cut", ToolCallSyntax::kHermes);
  StreamAccumulator stream;
  ChatOutputDelta d;
  d.tool_calls = {{0, "weather", R"({"city": "Pa)", false}};
  std::vector<json> events = output.Add(d);
  events = Concat(events, output.Finish(/*incomplete=*/true));
  for (const json& e : events) stream.Apply(e);
  ASSERT_EQ(output.items().size(), 1u);
  EXPECT_EQ(output.items()[0]["status"], "incomplete");
  EXPECT_EQ(output.items()[0]["arguments"], R"({"city": "Pa)");
  EXPECT_EQ(stream.output(), output.items());
}

TEST(ResponseOutput, AMessagesLogprobsComeWithItsTextAndStayInItsPart) {
  ResponseOutput output("lp", ToolCallSyntax::kHermes);
  StreamAccumulator stream;
  std::vector<json> events;
  ChatOutputDelta d1;
  d1.reasoning = "Hm.";
  d1.content = "Hel";
  ChatOutputDelta d2;
  d2.content = "lo";
  const json hel = json::array({{{"token", "Hel"}, {"logprob", -0.5}}});
  const json lo = json::array({{{"token", "lo"}, {"logprob", -0.25}}});
  events = Concat(events, output.Add(d1, hel));
  events = Concat(events, output.Add(d2, lo));
  events = Concat(events, output.Finish(false));
  for (const json& e : events) stream.Apply(e);
  EXPECT_EQ(stream.output(), output.items());
  ASSERT_EQ(output.items().size(), 2u);
  EXPECT_EQ(output.items()[1]["content"][0]["logprobs"], json::array({hel[0], lo[0]}));
  EXPECT_EQ(output.items()[0]["content"][0].count("logprobs"), 0u) << "reasoning has none";
  size_t deltas = 0;
  for (const json& e : events) {
    if (e["type"] == "response.output_text.delta") {
      EXPECT_EQ(e["logprobs"], deltas++ == 0 ? hel : lo);
    }
  }
  EXPECT_EQ(deltas, 2u);
}

TEST(ResponseOutput, ACutOffMessageIsIncompleteAndASilentTurnIsAnEmptyMessage) {
  ResponseOutput cut("x", ToolCallSyntax::kHermes);
  ChatOutputDelta d;
  d.content = "Once upon";
  StreamAccumulator stream;
  std::vector<json> events = cut.Add(d);
  events = Concat(events, cut.Finish(/*incomplete=*/true));
  for (const json& e : events) stream.Apply(e);
  ASSERT_EQ(cut.items().size(), 1u);
  EXPECT_EQ(cut.items()[0]["status"], "incomplete");
  EXPECT_EQ(stream.output(), cut.items());

  ResponseOutput silent("y", ToolCallSyntax::kHermes);
  StreamAccumulator silent_stream;
  std::vector<json> silent_events = silent.Add(ChatOutputDelta{});
  silent_events = Concat(silent_events, silent.Finish(false));
  for (const json& e : silent_events) silent_stream.Apply(e);
  ASSERT_EQ(silent.items().size(), 1u);
  EXPECT_EQ(silent.items()[0]["type"], "message");
  EXPECT_EQ(silent.items()[0]["content"][0]["text"], "");
  EXPECT_EQ(silent_stream.output(), silent.items());
}

TEST(ResponseOutput, AWholeTurnGivesTheSameItemsAsItsPieces) {
  ChatOutputDelta whole;
  whole.reasoning = "Hmm.";
  whole.content = "Hello world";
  ResponseOutput at_once("s", ToolCallSyntax::kHermes);
  at_once.Add(whole);
  at_once.Finish(false);
  ResponseOutput in_pieces("s", ToolCallSyntax::kHermes);
  for (const char* piece : {"Hel", "lo", " world"}) {
    ChatOutputDelta d;
    if (std::string(piece) == "Hel") d.reasoning = "Hmm.";
    d.content = piece;
    in_pieces.Add(d);
  }
  in_pieces.Finish(false);
  EXPECT_EQ(at_once.items(), in_pieces.items());
}

// A request's input items as listed: typed, string content as one text part, ids where none were given; then pages
// in either order, after / before an id, and the query's errors named.
TEST(InputItems, ListedWithIdsAndPagedEitherWay) {
  const ordered_json input = ordered_json::parse(R"([
      {"role": "user", "content": "Hi"},
      {"type": "message", "role": "assistant", "content": "Hello", "id": "msg_given"},
      {"type": "function_call_output", "call_id": "call_1", "output": "42"},
      {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}])");
  const json items = ListedInputItems(input, "r7");
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0], json::parse(R"({"role": "user", "type": "message", "id": "msg_r7_in0",
                                     "content": [{"type": "input_text", "text": "Hi"}]})"));
  EXPECT_EQ(items[1]["id"], "msg_given");
  EXPECT_EQ(items[1]["content"], json::parse(R"([{"type": "output_text", "text": "Hello"}])"));
  EXPECT_EQ(items[2]["id"], "fco_r7_in2");
  EXPECT_EQ(items[3]["content"], json::parse(R"([{"type": "input_text", "text": "Thanks"}])"));

  auto page = [&](std::vector<std::pair<std::string, std::string>> query) {
    httplib::Request request;
    for (auto& [k, v] : query) request.params.emplace(k, v);
    return InputItemsPage(items, request);
  };
  auto ids = [](const json& p) {
    std::vector<std::string> out;
    for (const json& item : p["data"]) out.push_back(item["id"]);
    return out;
  };
  absl::StatusOr<json> all = page({});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(ids(*all), (std::vector<std::string>{"msg_r7_in3", "fco_r7_in2", "msg_given", "msg_r7_in0"})) << "the last first";
  EXPECT_EQ((*all)["object"], "list");
  EXPECT_EQ((*all)["first_id"], "msg_r7_in3");
  EXPECT_EQ((*all)["last_id"], "msg_r7_in0");
  EXPECT_EQ((*all)["has_more"], false);
  absl::StatusOr<json> first_two = page({{"order", "asc"}, {"limit", "2"}});
  ASSERT_TRUE(first_two.ok());
  EXPECT_EQ(ids(*first_two), (std::vector<std::string>{"msg_r7_in0", "msg_given"}));
  EXPECT_EQ((*first_two)["has_more"], true);
  absl::StatusOr<json> next = page({{"order", "asc"}, {"limit", "2"}, {"after", "msg_given"}});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(ids(*next), (std::vector<std::string>{"fco_r7_in2", "msg_r7_in3"}));
  EXPECT_EQ((*next)["has_more"], false);
  absl::StatusOr<json> before = page({{"before", "msg_given"}});
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(ids(*before), (std::vector<std::string>{"msg_r7_in3", "fco_r7_in2"}));
  absl::StatusOr<json> none = page({{"after", "msg_r7_in0"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)["data"].empty());
  EXPECT_TRUE((*none)["first_id"].is_null());

  for (const auto& [query, param] : std::vector<std::pair<std::pair<std::string, std::string>, std::string>>{
           {{"limit", "0"}, "limit"}, {{"limit", "101"}, "limit"}, {{"limit", "x"}, "limit"}, {{"order", "up"}, "order"},
           {{"after", "msg_nope"}, "after"}, {{"include", "x"}, "include"}}) {
    absl::StatusOr<json> bad = page({query});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << param;
    EXPECT_EQ(ErrorParam(bad.status()), param);
  }
}

}  // namespace
}  // namespace arach::server::http
