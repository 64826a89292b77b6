// The HTTP API's pieces without a server: reading a completions body, OpenAI's error shape, model ids,
// and the legacy log-probs object.
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_call.h"
#include "server/http/model_ids.h"
#include "server/http/openai_error.h"
#include "server/http/token_logprobs.h"
#include "server/http/tokenize_request.h"
#include "tests/testing/temp_dir.h"
#include "tools/make_model/synthetic_tokenizer.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

std::string ParamOf(const std::string& body) {
  const absl::StatusOr<CompletionRequest> parsed = ParseCompletionRequest(body);
  if (parsed.ok()) return "<ok>";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  return ErrorParam(parsed.status());
}

TEST(CompletionRequest, ReadsEveryPromptForm) {
  auto one = ParseCompletionRequest(R"({"model": "m", "prompt": "Hi"})");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->prompts.size(), 1u);
  EXPECT_EQ(*one->prompts[0].text, "Hi");
  EXPECT_EQ(one->fields.sampling.max_tokens, 16) << "OpenAI's default";

  auto ids = ParseCompletionRequest(R"({"model": "m", "prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->prompts.size(), 1u);
  EXPECT_EQ(ids->prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));

  auto many = ParseCompletionRequest(R"({"model": "m", "prompt": ["a", [4, 5], "b"]})");
  ASSERT_TRUE(many.ok());
  ASSERT_EQ(many->prompts.size(), 3u);
  EXPECT_EQ(*many->prompts[2].text, "b");
  EXPECT_EQ(many->prompts[1].ids, (std::vector<int32_t>{4, 5}));
}

TEST(CompletionRequest, ReadsSamplingStopsLogprobsAndVariantFields) {
  auto r = ParseCompletionRequest(R"({"model": "m:arach", "prompt": "x", "max_tokens": 7, "temperature": 0, "top_p": 0.5,
      "top_k": -1, "seed": 18446744073709551615, "stop": ["\n", "END"], "n": 3, "logprobs": 2, "echo": true,
      "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"42": -100}, "user": "u1", "arach_offset": -1.5,
      "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, "min_tokens": 2, "stop_token_ids": [9]})");
  ASSERT_TRUE(r.ok()) << r.status();
  const SamplingParams& s = r->fields.sampling;
  EXPECT_EQ(s.max_tokens, 7);
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_EQ(s.top_k, 0) << "-1 means off";
  EXPECT_EQ(*s.seed, 18446744073709551615ull);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(s.presence_penalty, 0.5f);
  EXPECT_EQ(s.frequency_penalty, -0.5f);
  ASSERT_EQ(s.logit_bias.size(), 1u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>{42, -100.0f}));
  EXPECT_TRUE(s.logprobs);
  EXPECT_EQ(s.top_logprobs, 2);
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_EQ(s.min_tokens, 2);
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{9}));
  EXPECT_EQ(r->fields.n, 3);
  EXPECT_TRUE(r->echo);
  EXPECT_TRUE(r->fields.stream);
  EXPECT_TRUE(r->fields.include_usage);
  EXPECT_EQ(r->fields.variant.experiment_key, "u1") << "`user` is the experiment key";
  auto safety = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "safety_identifier": "end-user-7"})");
  ASSERT_TRUE(safety.ok()) << safety.status();
  EXPECT_EQ(safety->fields.variant.experiment_key, "end-user-7") << "OpenAI's newer end-user id keys the assignment too";
  auto both = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "user": "u", "safety_identifier": "s", "experiment_key": "e"})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->fields.variant.experiment_key, "e");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "safety_identifier": 7})"), "safety_identifier");
  EXPECT_EQ(*r->fields.variant.arach_offset, -1.5f);
  EXPECT_EQ(r->fields.model, "m:arach");
  EXPECT_EQ(r->fields.cache_salt, "") << "the shared prefix-cache namespace unless asked";
  auto salted = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "cache_salt": "tenant 7 salt"})");
  ASSERT_TRUE(salted.ok()) << salted.status();
  EXPECT_EQ(salted->fields.cache_salt, "tenant 7 salt");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "cache_salt": ""})"), "cache_salt");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "cache_salt": 7})"), "cache_salt");
}

TEST(CompletionRequest, MaxTokensZeroScoresOnlyWithEcho) {
  auto scored = ParseCompletionRequest(R"({"model": "m", "prompt": "a b", "max_tokens": 0, "echo": true, "logprobs": 0})");
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_TRUE(scored->score_only);
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "max_tokens": 0})"), "max_tokens");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "max_tokens": 0, "echo": true, "stream": true})"), "stream");
}

TEST(CompletionRequest, MalformedJsonSaysWhereAndWhy) {
  const auto r = ParseCompletionRequest(R"({"model": "m", "prompt": "a",, "n": 1})");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()),
            "body: is not valid JSON (parse error at line 1, column 30: syntax error while parsing object key - "
            "unexpected ','; expected string literal)");
  const auto huge = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "max_tokens": 1e400})");
  ASSERT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument) << "a number beyond a double is out_of_range, not a parse_error";
  EXPECT_EQ(std::string(huge.status().message()), "body: is not valid JSON (number overflow parsing '1e400')");
  const auto cut = ParseCompletionRequest(R"({"model": "m", "prompt": ")" + std::string(5000, 'x'));
  ASSERT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(cut.status().message().size(), 400u) << "the quoted token is clipped: " << cut.status().message();
  EXPECT_TRUE(absl::StartsWith(cut.status().message(), "body: is not valid JSON (parse error at line 1, column 5027"))
      << cut.status().message();
}

TEST(CompletionRequest, EveryBadFieldIsNamed) {
  EXPECT_EQ(ParamOf("{"), "body");
  EXPECT_EQ(ParamOf("[1]"), "body");
  EXPECT_EQ(ParamOf(R"({"prompt": "a"})"), "model");
  EXPECT_EQ(ParamOf(R"({"model": 3, "prompt": "a"})"), "model");
  EXPECT_EQ(ParamOf(R"({"model": "m"})"), "prompt");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": []})"), "prompt");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": [1, "a"]})"), "prompt[1]");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": ["a", [1, 2.5]]})"), "prompt[1][1]");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": ["a", {}]})"), "prompt[1]");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "temperature": "hot"})"), "temperature");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "max_tokens": 1.5})"), "max_tokens");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "max_tokens": 1e30})"), "max_tokens");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "temperature": 1e39})"), "temperature") << "beyond a float";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "n": 0})"), "n");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "n": 17})"), "n");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "seed": -1})"), "seed");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream": 1})"), "stream");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream": true, "stream_options": {"include_usage": "yes"}})"), "stream_options.include_usage")
      << "a nested field is named by its path";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream_options": {"include_usage": true}})"), "stream_options")
      << "stream options of an answer that is not streamed are not silently dropped";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream": false, "stream_options": {}})"), "stream_options");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream": true, "stream_options": {"continuous_usage_stats": true}})"),
            "stream_options.continuous_usage_stats");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream": true, "stream_options": {"include usage": true}})"),
            "stream_options") << "a key that is not a plain name is quoted after the parent";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stream_options": null})"), "<ok>");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stop": 5})"), "stop");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "stop": ["a", 1]})"), "stop[1]");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "logprobs": 21})"), "logprobs");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "logit_bias": {"x": 1}})"), "logit_bias");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "logit_bias": [1]})"), "logit_bias");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "user": 7})"), "user");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "arach": "on"})"), "arach");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "a", "echo": null, "temperature": null})"), "<ok>") << "null is absent";
  const std::string deep = R"({"model": "m", "prompt": "a", "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(ParamOf(deep), "body") << "nesting is bounded before parsing";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})"), "<ok>")
      << "brackets inside strings do not count";
}

std::string ChatParamOf(const std::string& body) {
  const absl::StatusOr<ChatRequest> parsed = ParseChatRequest(body);
  if (parsed.ok()) return "<ok>";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  return ErrorParam(parsed.status());
}

TEST(ChatRequest, ReadsMessagesToolsAndTemplateOptions) {
  auto r = ParseChatRequest(R"({"model": "m", "messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "content": "r", "tool_call_id": "1"}],
      "tools": [{"type": "function", "function": {"name": "f", "z": 1, "a": 2}}], "add_generation_prompt": false,
      "chat_template_kwargs": {"enable_thinking": false}, "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 3,
      "return_prompt": true, "documents": [{"title": "T", "text": "D", "url": "u"}], "chat_template": "{{ messages }}"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->chat_template, "{{ messages }}") << "the request's own template, as given (the call decides whether to trust it)";
  EXPECT_FALSE(ParseChatRequest(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})")->chat_template.has_value());
  EXPECT_EQ(r->input.messages.size(), 4u);
  EXPECT_EQ(r->input.documents.dump(), R"([{"title":"T","text":"D","url":"u"}])") << "documents as given, for RAG templates";
  EXPECT_EQ(r->input.messages[1]["content"], "a\nb") << "text parts join into the string templates expect";
  EXPECT_TRUE(r->input.messages[2]["content"].is_null());
  EXPECT_EQ(r->input.tools.dump(), R"([{"type":"function","function":{"name":"f","z":1,"a":2}}])") << "key order kept";
  EXPECT_FALSE(r->input.add_generation_prompt);
  EXPECT_EQ(r->input.extra["enable_thinking"], false);
  EXPECT_EQ(r->fields.sampling.max_tokens, 9);
  EXPECT_EQ(*r->fields.logprobs, 3);
  EXPECT_TRUE(r->return_prompt);
}

TEST(ChatRequest, EveryBadFieldIsNamed) {
  EXPECT_EQ(ChatParamOf(R"({"model": "m"})"), "messages");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": []})"), "messages");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [3]})"), "messages[0]");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"content": "x"}]})"), "messages[0].role");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "robot", "content": "x"}]})"), "messages[0].role");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user"}]})"), "messages[0].content");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": 5}]})"), "messages[0].content");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "messages[0].content[0].type");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]})"),
            "messages[0].content[0].text");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": 1}]})"), "messages[0].tool_calls");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template": 1})"), "chat_template");
  // OpenAI's shape of a conversation, checked before the template (whose own error named only "messages").
  const std::string user = R"({"role": "user", "content": "x"}, )";
  auto with = [&](const std::string& message) { return ChatParamOf(R"({"model": "m", "messages": [)" + user + message + "]}"); };
  EXPECT_EQ(with(R"({"role": "assistant"})"), "messages[1].content") << "neither content nor tool calls";
  EXPECT_EQ(with(R"({"role": "assistant", "content": null, "tool_calls": []})"), "messages[1].content");
  EXPECT_EQ(with(R"({"role": "assistant", "tool_calls": [1]})"), "messages[1].tool_calls[0]");
  EXPECT_EQ(with(R"({"role": "assistant", "tool_calls": [{"function": {}}]})"), "messages[1].tool_calls[0].function.name");
  EXPECT_EQ(with(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]})"), "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(with(R"({"role": "assistant", "tool_calls": [{"type": "code", "function": {"name": "f", "arguments": "{}"}}]})"),
            "messages[1].tool_calls[0].type");
  EXPECT_EQ(with(R"({"role": "user", "content": "y", "tool_calls": []})"), "messages[1].tool_calls");
  EXPECT_EQ(with(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                     "function": {"name": "f", "arguments": "{}"}}]})"),
            "<ok>");
  EXPECT_EQ(with(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]})"), "<ok>")
      << "arguments as an object, as vLLM takes them";
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": {}})"), "tools");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})"),
            "chat_template_kwargs");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"messages": 1}})"),
            "chat_template_kwargs");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"documents": []}})"),
            "chat_template_kwargs");
  for (const char* documents : {R"("x")", "[1]", R"([{"title": "T", "text": 2}])"}) {
    const std::string param = ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "documents": )" +
                                          std::string(documents) + "}");
    EXPECT_EQ(param.substr(0, 9), "documents") << documents;
  }
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "documents": [{"text": 2}]})"),
            "documents[0].text");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "add_generation_prompt": 1})"),
            "add_generation_prompt");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "echo": true})"), "echo");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "x"})"), "temperature");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 3})"), "top_logprobs")
      << "alternatives without log-probs are not silently dropped";
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": false, "top_logprobs": 3})"),
            "top_logprobs");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})"),
            "top_logprobs");
  EXPECT_EQ(ChatParamOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": null})"),
            "<ok>");
}

TEST(StructuredOutputRequest, ReadsResponseFormatAndStructuredOutputs) {
  auto schema = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema",
      "json_schema": {"name": "p", "schema": {"type": "object"}, "strict": true}}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->fields.structured_output.constraint.kind, OutputConstraint::Kind::kJsonSchema);
  EXPECT_EQ(schema->fields.structured_output.constraint.text, R"({"type":"object"})");
  EXPECT_TRUE(schema->fields.structured_output.constraint.strict);
  EXPECT_EQ(schema->fields.structured_output.field, "response_format.json_schema.schema");
  auto lax = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema",
      "json_schema": {"name": "p", "schema": "{\"type\": \"object\"}"}}})");
  ASSERT_TRUE(lax.ok()) << lax.status();
  EXPECT_FALSE(lax->fields.structured_output.constraint.strict) << "OpenAI's default is strict: false";
  auto text = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "response_format": {"type": "text"}})");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text->fields.structured_output.constraint.active());
  auto choice = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "structured_outputs": {"choice": ["a", "b"], "regex": null}})");
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->fields.structured_output.constraint.choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(choice->fields.structured_output.field, "structured_outputs.choice");
  auto grammar = ParseChatRequest(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "structured_outputs": {"grammar": "root ::= \"a\""}})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_EQ(grammar->fields.structured_output.constraint.kind, OutputConstraint::Kind::kGrammar);

  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})"),
            "response_format.json_schema.name");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n"}}})"),
            "response_format.json_schema.schema");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "response_format": {"type": "yaml"}})"), "response_format.type");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "structured_outputs": {"choice": []}})"), "structured_outputs.choice");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "structured_outputs": {"choice": [1]}})"), "structured_outputs.choice[0]");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "structured_outputs": {"whitespace_pattern": " "}})"),
            "structured_outputs.whitespace_pattern");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "structured_outputs": {}})"), "structured_outputs");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "structured_outputs": {"json": 3}})"), "structured_outputs.json");
  // A schema given as JSON text is held to the nesting bound of the body (xgrammar's recursive parser would
  // exhaust the stack on 100,000 levels: a request took the server down).
  const std::string deep = R"({\"x\": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto too_deep = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "structured_outputs": {"json": ")" + deep + R"("}})");
  ASSERT_FALSE(too_deep.ok());
  EXPECT_EQ(too_deep.status().message(), "structured_outputs.json: nests lists and objects deeper than 64 levels");
  const auto as_text = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "structured_outputs": {"json": "{\"type\": \"object\"}"}})");
  ASSERT_TRUE(as_text.ok()) << as_text.status();
  EXPECT_EQ(as_text->fields.structured_output.constraint.text, R"({"type": "object"})");
}

TEST(RequestParameters, UnknownAndUnimplementedAreRefusedNoOpsAccepted) {
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "temprature": 0.5})"), "temprature") << "a typo is not silently ignored";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "messages": []})"), "messages");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "best_of": 3})"), "best_of");
  // A key that is no plain name is quoted in the message; the error names the object holding it (found by fuzzing).
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "log&t_bias": {}})"), "body");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "max-tokens": 3})"), "body") << "a dash is no parameter name either";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "response_format": {"type": "text", "a b": 1}})"), "response_format");
  // suffix (fill in the middle): a string, with text prompts, not with echo.
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "suffix": "end"})"), "<ok>");
  EXPECT_EQ(*ParseCompletionRequest(R"({"model": "m", "prompt": ["x", "y"], "suffix": "end"})")->suffix, "end");
  EXPECT_FALSE(ParseCompletionRequest(R"({"model": "m", "prompt": "x", "suffix": ""})")->suffix.has_value()) << "\"\": none";
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "suffix": 3})"), "suffix");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": [1, 2], "suffix": "end"})"), "suffix");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": ["x", [1, 2]], "suffix": "end"})"), "suffix");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "suffix": "end", "echo": true})"), "echo");
  EXPECT_EQ(ParamOf(R"({"model": "m", "prompt": "x", "best_of": 1, "suffix": "", "user": "u", "store": true, "metadata": {"a": "b"},
                       "service_tier": "auto", "prompt_cache_key": "k", "safety_identifier": "s", "logprobs": null})"),
            "<ok>");
  auto chat = [](const std::string& extra) {
    const absl::StatusOr<ChatRequest> parsed =
        ParseChatRequest(R"({"model": "m", "messages": [{"role": "user", "content": "x"}])" + extra + "}");
    return parsed.ok() ? std::string("<ok>") : std::string(parsed.status().message());
  };
  EXPECT_EQ(chat(R"(, "prompt": "x")"), "prompt: is not a parameter of /v1/chat/completions");
  EXPECT_EQ(chat(R"(, "reasoning_effort": "low")"), "<ok>") << "set where the template is known (reasoning_effort_test)";
  EXPECT_EQ(chat(R"(, "reasoning_effort": "max")"), "reasoning_effort: must be one of none, minimal, low, medium, high, xhigh");
  EXPECT_EQ(chat(R"(, "functions": [])"), "functions: is deprecated and not supported: use tools");
  EXPECT_EQ(chat(R"(, "modalities": ["text"], "parallel_tool_calls": true)"), "<ok>");
  EXPECT_EQ(chat(R"(, "modalities": ["text", "audio"])"), "modalities: only text output is supported; leave modalities out");
  EXPECT_EQ(chat(R"(, "tool_choice": "required")"), "tool_choice: asks for tool calls but no tools are given");
  EXPECT_EQ(chat(R"(, "parallel_tool_calls": 1)"), "parallel_tool_calls: must be true or false");
}

TEST(TokenizeRequest, ReadsAPromptOrAConversation) {
  auto prompt = ParseTokenizeRequest(R"({"model": "m", "prompt": "Hi", "add_special_tokens": false})", 100);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->model, "m");
  EXPECT_EQ(prompt->prompt, "Hi");
  EXPECT_FALSE(prompt->add_special_tokens);
  EXPECT_FALSE(prompt->chat.has_value());
  EXPECT_TRUE(ParseTokenizeRequest(R"({"prompt": "Hi"})", 100)->add_special_tokens) << "vLLM's default";
  EXPECT_FALSE(prompt->return_token_strs);
  EXPECT_TRUE(ParseTokenizeRequest(R"({"prompt": "Hi", "return_token_strs": true})", 100)->return_token_strs);

  auto chat = ParseTokenizeRequest(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
                                       "tools": [{"type": "function", "function": {"name": "f"}}], "add_generation_prompt": false,
                                       "chat_template_kwargs": {"enable_thinking": false}})",
                                   100);
  ASSERT_TRUE(chat.ok()) << chat.status();
  ASSERT_TRUE(chat->chat.has_value());
  EXPECT_FALSE(chat->model.has_value());
  EXPECT_EQ(chat->chat->input.messages[0]["content"], "a\nb") << "read as the chat route reads it";
  EXPECT_EQ(chat->chat->tools.size(), 1u);
  EXPECT_FALSE(chat->chat->input.add_generation_prompt);
  EXPECT_EQ(chat->chat->input.extra["enable_thinking"], false);
  auto continued = ParseTokenizeRequest(R"({"messages": [{"role": "assistant", "content": "x"}], "continue_final_message": true})", 100);
  ASSERT_TRUE(continued.ok()) << continued.status();
  EXPECT_TRUE(continued->chat->input.continue_final_message);
  auto chat_strings = ParseTokenizeRequest(R"({"messages": [{"role": "user", "content": "x"}], "return_token_strs": true})", 100);
  ASSERT_TRUE(chat_strings.ok()) << chat_strings.status();
  EXPECT_TRUE(chat_strings->return_token_strs);

  auto ids = ParseDetokenizeRequest(R"({"model": "m", "tokens": [0, 5, 2147483647]})", 3);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->ids, (std::vector<int32_t>{0, 5, 2147483647}));
  EXPECT_EQ(ids->model, "m");
}

TEST(TokenizeRequest, EveryBadFieldIsNamed) {
  const auto tokenize_param = [](const std::string& body) {
    auto parsed = ParseTokenizeRequest(body, 8);
    return parsed.ok() ? "<ok>" : ErrorParam(parsed.status());
  };
  EXPECT_EQ(tokenize_param("[]"), "body");
  EXPECT_EQ(tokenize_param(R"({"prompt": "a", "model": 3})"), "model");
  EXPECT_EQ(tokenize_param(R"({})"), "prompt");
  EXPECT_EQ(tokenize_param(R"({"prompt": 3})"), "prompt");
  EXPECT_EQ(tokenize_param(R"({"prompt": "123456789"})"), "prompt") << "over the byte limit";
  EXPECT_EQ(tokenize_param(R"({"prompt": "12345678"})"), "<ok>") << "at the byte limit";
  EXPECT_EQ(tokenize_param(R"({"prompt": "a", "add_special_tokens": "no"})"), "add_special_tokens");
  EXPECT_EQ(tokenize_param(R"({"prompt": "a", "return_token_strs": 1})"), "return_token_strs");
  EXPECT_EQ(tokenize_param(R"({"prompt": "a", "tools": []})"), "tools") << "a prompt's body takes no chat fields";
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": "a"}], "add_special_tokens": true})"), "add_special_tokens");
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": "a"}], "temperature": 1})"), "temperature");
  EXPECT_EQ(tokenize_param(R"({"messages": []})"), "messages");
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": 3}]})"), "messages[0].content");
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function"}]})"), "tools[0].function");
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": "a"}], "add_generation_prompt": 1})"), "add_generation_prompt");
  EXPECT_EQ(tokenize_param(R"({"messages": [{"role": "user", "content": "a"}], "add_generation_prompt": true, "continue_final_message": true})"),
            "continue_final_message");

  const auto detokenize_param = [](const std::string& body) {
    auto parsed = ParseDetokenizeRequest(body, 2);
    return parsed.ok() ? "<ok>" : ErrorParam(parsed.status());
  };
  EXPECT_EQ(detokenize_param(R"({"tokens": [1, 2]})"), "<ok>");
  EXPECT_EQ(detokenize_param(R"({"tokens": [1, 2, 3]})"), "tokens") << "over the id limit";
  EXPECT_EQ(detokenize_param(R"({"tokens": "1 2"})"), "tokens");
  EXPECT_EQ(detokenize_param(R"({})"), "tokens");
  EXPECT_EQ(detokenize_param(R"({"tokens": [1, -1]})"), "tokens[1]");
  EXPECT_EQ(detokenize_param(R"({"tokens": [2147483648]})"), "tokens[0]");
  EXPECT_EQ(detokenize_param(R"({"tokens": [1.5]})"), "tokens[0]");
  EXPECT_EQ(detokenize_param(R"({"tokens": [1], "prompt": "a"})"), "prompt");
  EXPECT_EQ(detokenize_param(R"({"tokens": [1], "model": []})"), "model");
}

// How long the client waits for a whole answer: the smaller of the OpenAI clients' timeout headers; anything else
// (absent, not a number, not positive) says nothing.
TEST(ClientWait, TheSmallerOfTheClientLibrariesTimeouts) {
  httplib::Request request;
  EXPECT_FALSE(ClientWaitOf(request).has_value());
  request.set_header("x-stainless-timeout", "600");
  ASSERT_TRUE(ClientWaitOf(request).has_value());
  EXPECT_DOUBLE_EQ(ClientWaitOf(request)->count(), 600.0);
  request.set_header("x-stainless-read-timeout", "12.5");
  EXPECT_DOUBLE_EQ(ClientWaitOf(request)->count(), 12.5);
  for (const char* odd : {"soon", "0", "-3", "nan", ""}) {
    httplib::Request other;
    other.set_header("x-stainless-timeout", odd);
    EXPECT_FALSE(ClientWaitOf(other).has_value()) << odd;
  }
}

TEST(OpenAiError, ShapeStatusAndParam) {
  const json body = ErrorBody(absl::InvalidArgumentError("temperature: -1 must be >= 0"));
  EXPECT_EQ(body["error"]["message"], "temperature: -1 must be >= 0");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], "invalid_argument");
  EXPECT_TRUE(ErrorBody(absl::InternalError("the thing broke: badly"))["error"]["param"].is_null())
      << "prose before a colon is not a parameter";
  EXPECT_EQ(ErrorBody(absl::NotFoundError("model: 'x' is not served here"))["error"]["code"], "model_not_found");
  EXPECT_EQ(HttpStatusOf(absl::InvalidArgumentError("")), 400);
  EXPECT_EQ(HttpStatusOf(absl::FailedPreconditionError("")), 400);
  EXPECT_EQ(HttpStatusOf(absl::NotFoundError("")), 404);
  EXPECT_EQ(HttpStatusOf(absl::ResourceExhaustedError("")), 429);
  EXPECT_EQ(HttpStatusOf(absl::UnavailableError("")), 503);
  EXPECT_EQ(HttpStatusOf(absl::InternalError("")), 500);
  EXPECT_EQ(JsonText(json("\xe2\x82")), "\"\xef\xbf\xbd\"") << "a partial UTF-8 character becomes U+FFFD, not an exception";
}

TEST(ModelIds, ListsEveryVariantTheServerRuns) {
  const ServedModels plain{"tiny", false, {}}, adapted{"tiny", true, {}};
  EXPECT_EQ(ServedModelIds(plain), (std::vector<std::string>{"tiny", "tiny:base", "tiny:arach"}));
  EXPECT_EQ(ServedModelIds(adapted),
            (std::vector<std::string>{"tiny", "tiny:base", "tiny:arach", "tiny:skip", "tiny:arach+skip"}));
  auto server_decides = VariantOfModelId("tiny", plain);
  ASSERT_TRUE(server_decides.ok());
  EXPECT_FALSE(server_decides->arach.has_value());
  EXPECT_FALSE(server_decides->skip.has_value());
  EXPECT_EQ(server_decides->lora, "");
  auto both = VariantOfModelId("tiny:arach+skip", adapted);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->arach, true);
  EXPECT_EQ(both->skip, true);
  EXPECT_EQ(VariantOfModelId("other", plain).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(VariantOfModelId("tinyx:arach", plain).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrorParam(VariantOfModelId("tiny:fast", plain).status()), "model");
  EXPECT_EQ(VariantOfModelId("tiny:skip", plain).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelIds, EachLoraIsAModelOfItsOwnWithEveryVariant) {
  const ServedModels served{"tiny", false, {"sql", "sqlite"}};
  EXPECT_EQ(ServedModelIds(served), (std::vector<std::string>{"tiny", "tiny:base", "tiny:arach", "sql", "sql:base", "sql:arach",
                                                              "sqlite", "sqlite:base", "sqlite:arach"}));
  auto sql = VariantOfModelId("sql", served);
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_EQ(sql->lora, "sql");
  EXPECT_FALSE(sql->arach.has_value());  // the server's default variant or its experiment decide
  auto sqlite_arach = VariantOfModelId("sqlite:arach", served);
  ASSERT_TRUE(sqlite_arach.ok()) << sqlite_arach.status();
  EXPECT_EQ(sqlite_arach->lora, "sqlite");
  EXPECT_EQ(sqlite_arach->arach, true);
  EXPECT_EQ(LoraOfModelId("sql:arach", served), "sql");
  EXPECT_EQ(LoraOfModelId("sqlite", served), "sqlite");
  EXPECT_EQ(LoraOfModelId("tiny:arach", served), "");
  EXPECT_EQ(VariantOfModelId("sql:skip", served).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(VariantOfModelId("sqlx", served).status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(ModelNotServed("x", served).message().find("sqlite:arach"), std::string::npos);
}

TEST(CompletionLogprobs, PiecesOffsetsAndAlternatives) {
  testing::ScopedTempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 400, 3).ok());
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // Byte tokens: ids 0..255 are the bytes themselves.
  CompletionLogprobs logprobs(**tokenizer, std::vector<int32_t>{'a'});
  const std::vector<TokenLogprob> top = {{'c', -0.1f}};
  ASSERT_TRUE(logprobs.Add('b', -0.5f, &top).ok());
  ASSERT_TRUE(logprobs.Add('c', std::nullopt, nullptr).ok());
  const json first = logprobs.TakeJson();
  EXPECT_EQ(first["tokens"], json({"b", "c"}));
  EXPECT_EQ(first["token_logprobs"][0], -0.5f);
  EXPECT_TRUE(first["token_logprobs"][1].is_null());
  EXPECT_EQ(first["top_logprobs"][0], json({{"c", -0.1f}, {"b", -0.5f}})) << "the chosen token is listed too";
  EXPECT_TRUE(first["top_logprobs"][1].is_null());
  EXPECT_EQ(first["text_offset"], json({0, 1}));
  ASSERT_TRUE(logprobs.Add('d', -1.0f, nullptr).ok());
  EXPECT_EQ(logprobs.TakeJson()["text_offset"], json({2})) << "offsets continue across a stream's deltas";
}

// The Responses API's output_text carries the log-probs of the tokens its content came from, placed by the spans
// of the turn's text the parser took the content from: tokens of a call or reasoning between them have none.
TEST(ContentLogprobs, TokensArePlacedByTheContentsSpans) {
  testing::ScopedTempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 400, 3).ok());
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  ContentLogprobs logprobs(**tokenizer, std::vector<int32_t>{'a'}, /*text_skips_special_tokens=*/true);
  const auto tokens_of = [](const json& entries) {
    std::string text;
    for (const json& entry : entries) text += entry["token"].get<std::string>();
    return text;
  };
  // The turn's text "xy<z>ab" in byte tokens, "<z>" read as something else than content.
  for (char c : std::string("xy<")) ASSERT_TRUE(logprobs.Add({c, -0.5f, {{'q', -1.0f}}}).ok());
  const json first = logprobs.Take(std::vector<TextSpan>{{0, 2}});
  EXPECT_EQ(tokens_of(first), "xy");
  EXPECT_EQ(first[0]["logprob"], -0.5f);
  EXPECT_EQ(first[0]["top_logprobs"][0]["token"], "q");
  EXPECT_EQ(logprobs.Take({}), json::array()) << "a token not yet placed waits";
  for (char c : std::string("z>ab")) ASSERT_TRUE(logprobs.Add({c, -0.25f, {}}).ok());
  EXPECT_EQ(tokens_of(logprobs.Take(std::vector<TextSpan>{{5, 6}, {6, 7}})), "ab") << "the tokens of <z> are dropped";
}

// vLLM's prompt_logprobs: null first, then per prompt token its own entry (rank in the vocabulary) and the asked
// alternatives (ranks 1..n), keyed by id, each decoded as the piece it adds there; the token counted once where it
// is among its alternatives.
TEST(PromptLogprobs, EachTokenWithItsRankAndAlternatives) {
  testing::ScopedTempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 400, 3).ok());
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::vector<int32_t> prompt = {'a', 'b', 'c'};
  FinishInfo info;
  info.prompt_logprobs = {-0.5f, -2.0f};
  info.prompt_ranks = {1, 7};
  info.prompt_top_logprobs = {{{'b', -0.5f}, {'x', -1.5f}, {'y', -3.0f}}, {{'z', -0.25f}, {'w', -1.0f}, {'v', -1.5f}}};
  auto out = PromptLogprobsJson(**tokenizer, prompt, info, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_TRUE((*out)[0].is_null());
  const json expected_b = json::parse(R"({"98": {"logprob": -0.5, "rank": 1, "decoded_token": "b"},
                                         "120": {"logprob": -1.5, "rank": 2, "decoded_token": "x"}})");
  EXPECT_EQ((*out)[1], expected_b) << "the prompt token is its first alternative: two entries";
  const json& c = (*out)[2];
  EXPECT_EQ(c.size(), 3u) << "the token and two alternatives (only the first two of the three kept)";
  EXPECT_EQ(c["99"]["rank"], 7);
  EXPECT_EQ(c["99"]["logprob"], -2.0f);
  EXPECT_EQ(c["122"]["rank"], 1);
  EXPECT_EQ(c["122"]["decoded_token"], "z");
  EXPECT_EQ(c["119"]["rank"], 2);
  EXPECT_FALSE(c.contains("118")) << "the third alternative was not asked for";
  auto own_only = PromptLogprobsJson(**tokenizer, prompt, info, 0);
  ASSERT_TRUE(own_only.ok());
  EXPECT_EQ((*own_only)[2].size(), 1u);
  info.prompt_ranks.clear();
  EXPECT_FALSE(PromptLogprobsJson(**tokenizer, prompt, info, 2).ok()) << "an engine answer without ranks is an error, not a guess";
}

}  // namespace
}  // namespace arach::server::http
