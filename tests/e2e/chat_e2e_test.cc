// End-to-end chat: arach-server on qwen3-tiny with real chat templates taken from ../shared/fixtures/chat
// at test time. The gRPC Chat call and /v1/chat/completions render the same prompt (the fixture's reference)
// and answer the same; a template's raise_exception is a 400 / INVALID_ARGUMENT with its own message; a model
// without a template refuses chat with FAILED_PRECONDITION; tool_choice none keeps the tools in the prompt unless the
// server leaves them out; a request's own template is refused unless the server trusts it; a template outside the supported subset stops the
// server at start, naming the file, line and column.
#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "client/arach_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using client::ArachClient;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using testing::ServerProcess;

ordered_json ChatFixture(const std::string& file) {
  std::ifstream in(testing::FixturePath("chat/" + file));
  std::stringstream text;
  text << in.rdbuf();
  return ordered_json::parse(text.str());
}

std::string ReferenceText(const std::string& tmpl, const std::string& conversation) {
  const ordered_json fixture = ChatFixture("cases.json");
  for (const ordered_json& c : fixture["cases"]) {
    if (c["template"] == tmpl && c["conversation"] == conversation && c["add_generation_prompt"] == true && c["extra"].is_null()) {
      return c.contains("text") ? c["text"].get<std::string>() : c["error"].get<std::string>();
    }
  }
  return "";
}

// qwen3-tiny served with the fixture template `name` (written to a file in `dir`) and `flags`.
std::unique_ptr<ServerProcess> StartChatServer(const testing::ScopedTempDir& dir, const std::string& name,
                                               const std::vector<std::string>& flags = {}) {
  const std::string path = dir.path() + "/" + name + ".jinja";
  std::ofstream(path) << ChatFixture("templates.json")[name]["template"].get<std::string>();
  std::vector<std::string> args = {"--model=" + testing::FixturePath("qwen3-tiny"), "--chat_template=" + path, "--kv_cache_bytes=33554432"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto server = ServerProcess::Start(testing::ServerBinary(), args);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

struct HttpAnswer {
  int status = 0;
  json body;
};
HttpAnswer PostText(const ServerProcess& server, const std::string& body, const std::string& route) {
  httplib::Client client("http://" + server.http_address());
  client.set_read_timeout(120, 0);
  httplib::Result r = client.Post(route, body, "application/json");
  if (!r) return {};
  return {r->status, json::parse(r->body, nullptr, false)};
}
HttpAnswer PostChat(const ServerProcess& server, const json& body, const std::string& route = "/v1/chat/completions") {
  return PostText(server, body.dump(), route);
}

arach::v1::ChatRequest GrpcChat(const ordered_json& messages, int max_tokens) {
  arach::v1::ChatRequest request;
  for (const ordered_json& m : messages) {
    arach::v1::ChatMessage* message = request.add_messages();
    message->set_role(m["role"].get<std::string>());
    if (m["content"].is_string()) message->set_content(m["content"].get<std::string>());
    if (m.contains("tool_calls")) message->set_tool_calls_json(m["tool_calls"].dump());
  }
  request.mutable_generation()->set_max_tokens(max_tokens);
  request.mutable_generation()->mutable_sampling()->set_temperature(0.0f);
  request.set_return_prompt(true);
  return request;
}

TEST(ChatServer, GrpcChatAndHttpChatRenderTheReferencePromptAndAnswerAlike) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  auto server = StartChatServer(dir, "qwen3");
  ASSERT_NE(server, nullptr);
  const ordered_json conversation = ChatFixture("cases.json")["conversations"]["multi_turn_system"];
  const HttpAnswer http = PostChat(*server, {{"model", "qwen3-tiny:arach"}, {"messages", json::parse(conversation["messages"].dump())},
                                             {"max_tokens", 10}, {"temperature", 0}, {"return_prompt", true}});
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(http.body["arach_prompt"], ReferenceText("qwen3", "multi_turn_system"));
  EXPECT_EQ(http.body["arach_variant"], "arach");

  auto client = ArachClient::Connect(server->grpc_address());
  arach::v1::ChatRequest request = GrpcChat(conversation["messages"], 10);
  request.mutable_generation()->mutable_variant()->set_arach(true);
  std::string text;
  std::vector<int32_t> tokens;
  arach::v1::Finish finish;
  const grpc::Status status = client->Chat(request, [&](const arach::v1::GenerateResponse& r) {
    text += r.text();
    tokens.insert(tokens.end(), r.token_ids().begin(), r.token_ids().end());
    if (r.has_finish()) finish = r.finish();
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(finish.chat_prompt(), ReferenceText("qwen3", "multi_turn_system"));
  EXPECT_EQ(text, http.body["choices"][0]["message"]["content"]) << "the same prompt, variant and greedy sampling";
  EXPECT_EQ(finish.variant().name(), "arach");
  EXPECT_FALSE(finish.has_stop_token_id());
  EXPECT_EQ(http.body["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(http.body["choices"][0].contains("stop_reason") && http.body["choices"][0]["stop_reason"].is_null()) << http.body;

  // A stop token the request lists is its stop_reason (an id), over both APIs.
  ASSERT_GE(tokens.size(), 2u);
  const HttpAnswer stopped = PostChat(*server, {{"model", "qwen3-tiny:arach"}, {"messages", json::parse(conversation["messages"].dump())},
                                                {"max_tokens", 10}, {"temperature", 0}, {"stop_token_ids", {tokens[1]}}});
  ASSERT_EQ(stopped.status, 200) << stopped.body;
  EXPECT_EQ(stopped.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped.body["choices"][0]["stop_reason"], tokens[1]);
  const size_t first_at = std::find(tokens.begin(), tokens.end(), tokens[1]) - tokens.begin();
  EXPECT_EQ(stopped.body["usage"]["completion_tokens"], first_at + 1) << "the generation ends at that token";
  request.mutable_generation()->add_stop_token_ids(tokens[1]);
  arach::v1::Finish stopped_finish;
  ASSERT_TRUE(client->Chat(request, [&](const arach::v1::GenerateResponse& r) {
    if (r.has_finish()) stopped_finish = r.finish();
  }).ok());
  EXPECT_EQ(stopped_finish.reason(), arach::v1::FINISH_REASON_STOP);
  ASSERT_TRUE(stopped_finish.has_stop_token_id());
  EXPECT_EQ(stopped_finish.stop_token_id(), tokens[1]);

  // OpenAI's developer role is the system role of its newer models: a template that never names it (Qwen3's) gets
  // it as system; it dropped the instructions from the prompt before.
  ordered_json as_developer = conversation["messages"];
  ASSERT_EQ(as_developer[0]["role"], "system");
  as_developer[0]["role"] = "developer";
  const HttpAnswer developer = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(as_developer.dump())},
                                                  {"max_tokens", 1}, {"return_prompt", true}});
  ASSERT_EQ(developer.status, 200) << developer.body;
  EXPECT_EQ(developer.body["arach_prompt"], ReferenceText("qwen3", "multi_turn_system"));
  arach::v1::Finish developer_finish;
  ASSERT_TRUE(client->Chat(GrpcChat(as_developer, 1), [&](const arach::v1::GenerateResponse& r) {
    if (r.has_finish()) developer_finish = r.finish();
  }).ok());
  EXPECT_EQ(developer_finish.chat_prompt(), ReferenceText("qwen3", "multi_turn_system"));
}

// continue_final_message (vLLM's prefill): the prompt is the conversation up to the end of the final message's
// text, without the markers that close the turn; the answer continues it, as a completion of that prompt does; both
// APIs alike.
TEST(ChatServer, ContinueFinalMessagePrefillsTheAssistantsAnswer) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  auto server = StartChatServer(dir, "qwen3");
  ASSERT_NE(server, nullptr);
  const ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": "Name a colour."},
                                                        {"role": "assistant", "content": "My favourite colour is"}])");
  const json kwargs = {{"enable_thinking", false}};
  const HttpAnswer prefilled = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(messages.dump())}, {"max_tokens", 8},
                                                  {"temperature", 0}, {"continue_final_message", true}, {"return_prompt", true},
                                                  {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(prefilled.status, 200) << prefilled.body;
  const HttpAnswer closed = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(messages.dump())}, {"max_tokens", 1},
                                               {"add_generation_prompt", false}, {"return_prompt", true}, {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(closed.status, 200) << closed.body;
  const std::string prompt = prefilled.body["arach_prompt"];
  const std::string whole = closed.body["arach_prompt"];
  EXPECT_EQ(whole, prompt + "<|im_end|>\n") << "the prefill is the whole conversation but the end of its turn";
  EXPECT_TRUE(absl::EndsWith(prompt, "My favourite colour is")) << prompt;

  // The answer continues the prompt as a greedy completion of it does (until the end of the turn).
  httplib::Client http("http://" + server->http_address());
  const json completion = json::parse(http.Post("/v1/completions", json{{"model", "qwen3-tiny"}, {"prompt", prompt}, {"max_tokens", 8},
                                                                       {"temperature", 0}}.dump(), "application/json")->body);
  const std::string content = prefilled.body["choices"][0]["message"]["content"];
  const std::string continued = completion["choices"][0]["text"];
  EXPECT_EQ(continued.substr(0, content.size()), content);
  if (prefilled.body["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(continued, content);
  }

  auto client = ArachClient::Connect(server->grpc_address());
  arach::v1::ChatRequest request = GrpcChat(messages, 8);
  request.set_continue_final_message(true);
  request.set_chat_template_kwargs_json(kwargs.dump());
  std::string text;
  arach::v1::Finish finish;
  ASSERT_TRUE(client->Chat(request, [&](const arach::v1::GenerateResponse& r) {
    text += r.text();
    if (r.has_finish()) finish = r.finish();
  }).ok());
  EXPECT_EQ(finish.chat_prompt(), prompt);
  EXPECT_EQ(text, content);

  // A prefill that opens the reasoning without closing it is continued as reasoning: the model's text up to its
  // </think> is the reasoning, the rest the content (as a greedy completion of the same prompt splits).
  const ordered_json thinking = ordered_json::parse(R"([{"role": "user", "content": "Name a colour."},
                                                        {"role": "assistant", "content": "<think>\nThe user wants"}])");
  const HttpAnswer reasoned = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(thinking.dump())}, {"max_tokens", 12},
                                                 {"temperature", 0}, {"continue_final_message", true}, {"return_prompt", true}});
  ASSERT_EQ(reasoned.status, 200) << reasoned.body;
  const json reasoned_completion = json::parse(
      http.Post("/v1/completions", json{{"model", "qwen3-tiny"}, {"prompt", reasoned.body["arach_prompt"]}, {"max_tokens", 12},
                                        {"temperature", 0}, {"skip_special_tokens", false}}.dump(), "application/json")->body);
  const std::string thought = reasoned_completion["choices"][0]["text"];
  const size_t close = thought.find("</think>");
  const json& reasoned_message = reasoned.body["choices"][0]["message"];
  ASSERT_FALSE(thought.substr(0, close).empty());
  EXPECT_EQ(reasoned_message["reasoning_content"], thought.substr(0, close)) << reasoned.body;
  if (close == std::string::npos) {
    EXPECT_EQ(reasoned_message["content"], "") << reasoned.body;
  }

  // A new turn cannot be opened after a message left open.
  const HttpAnswer both = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(messages.dump())},
                                             {"continue_final_message", true}, {"add_generation_prompt", true}});
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.body["error"]["param"], "continue_final_message") << both.body;
  request.set_add_generation_prompt(true);
  const grpc::Status refused = client->Chat(request, [](const arach::v1::GenerateResponse&) {});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(refused.error_message(), "continue_final_message: ")) << refused.error_message();
}

TEST(ChatServer, TheTemplatesOwnErrorIsTheAnswer) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  auto server = StartChatServer(dir, "gemma3");  // refuses tool turns: roles must alternate
  ASSERT_NE(server, nullptr);
  const ordered_json conversation = ChatFixture("cases.json")["conversations"]["tool_call_roundtrip"];
  const std::string message = ReferenceText("gemma3", "tool_call_roundtrip");
  ASSERT_FALSE(message.empty());
  const HttpAnswer http = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", json::parse(conversation["messages"].dump())}});
  EXPECT_EQ(http.status, 400) << http.body;
  EXPECT_EQ(http.body["error"]["message"], "messages: " + message);
  EXPECT_EQ(http.body["error"]["param"], "messages");
  auto client = ArachClient::Connect(server->grpc_address());
  const grpc::Status status = client->Chat(GrpcChat(conversation["messages"], 4), [](const auto&) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "messages: " + message);
}

// OpenAI's reasoning effort reaches Qwen3's template as its enable_thinking switch ("none" turns thinking off), on
// chat (reasoning_effort) and the Responses API (reasoning.effort, repeated in the answer); a template without a
// reasoning switch (Gemma 3's) refuses it, naming the parameter.
TEST(ChatServer, ReasoningEffortReachesTheTemplateOrIsRefused) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  auto server = StartChatServer(dir, "qwen3");
  ASSERT_NE(server, nullptr);
  const json messages = json::parse(R"([{"role": "user", "content": "Name a colour."}])");
  auto prompt = [&](json extra) {
    json body = {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 1}, {"return_prompt", true}};
    body.update(extra);
    const HttpAnswer answer = PostChat(*server, body);
    EXPECT_EQ(answer.status, 200) << answer.body;
    return answer.status == 200 ? answer.body["arach_prompt"].get<std::string>() : "";
  };
  const std::string thinking_off = prompt({{"chat_template_kwargs", {{"enable_thinking", false}}}});
  EXPECT_NE(thinking_off.find("<think>\n\n</think>"), std::string::npos) << thinking_off;
  EXPECT_EQ(prompt({{"reasoning_effort", "none"}}), thinking_off);
  EXPECT_EQ(prompt({{"reasoning_effort", "high"}}), prompt(json::object()));
  const HttpAnswer conflict = PostChat(*server, {{"model", "qwen3-tiny"}, {"messages", messages}, {"reasoning_effort", "low"},
                                                 {"chat_template_kwargs", {{"enable_thinking", false}}}});
  EXPECT_EQ(conflict.status, 400) << conflict.body;
  EXPECT_EQ(conflict.body["error"]["param"], "reasoning_effort");

  const HttpAnswer response = PostChat(*server, {{"model", "qwen3-tiny"}, {"input", "Name a colour."}, {"max_output_tokens", 4},
                                                 {"reasoning", {{"effort", "none"}, {"summary", "auto"}}}}, "/v1/responses");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body["reasoning"], (json{{"effort", "none"}, {"summary", "auto"}}));
  const HttpAnswer bad = PostChat(*server, {{"model", "qwen3-tiny"}, {"input", "x"}, {"reasoning", {{"effort", "max"}}}}, "/v1/responses");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.body["error"]["param"], "reasoning.effort");

  // gRPC Chat's reasoning_effort, alike.
  auto client = ArachClient::Connect(server->grpc_address());
  const auto grpc_prompt = [&](const std::string& effort, grpc::Status* status) {
    arach::v1::ChatRequest request = GrpcChat(ordered_json::parse(messages.dump()), 1);
    request.set_return_prompt(true);
    request.set_reasoning_effort(effort);
    std::string prompt_text;
    *status = client->Chat(request, [&](const arach::v1::GenerateResponse& r) {
      if (r.has_finish()) prompt_text = r.finish().chat_prompt();
    });
    return prompt_text;
  };
  grpc::Status status;
  EXPECT_EQ(grpc_prompt("none", &status), thinking_off);
  EXPECT_TRUE(status.ok()) << status.error_message();
  grpc_prompt("most", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(status.error_message(), "reasoning_effort: ")) << status.error_message();

  auto gemma = StartChatServer(dir, "gemma3");
  ASSERT_NE(gemma, nullptr);
  const HttpAnswer refused = PostChat(*gemma, {{"model", "qwen3-tiny"}, {"messages", messages}, {"reasoning_effort", "low"}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body["error"]["param"], "reasoning_effort");
  const HttpAnswer refused_too = PostChat(*gemma, {{"model", "qwen3-tiny"}, {"input", "x"}, {"reasoning", {{"effort", "low"}}}}, "/v1/responses");
  EXPECT_EQ(refused_too.status, 400) << refused_too.body;
  EXPECT_EQ(refused_too.body["error"]["param"], "reasoning.effort");
  arach::v1::ChatRequest low = GrpcChat(ordered_json::parse(messages.dump()), 1);
  low.set_reasoning_effort("low");
  const grpc::Status grpc_refused = ArachClient::Connect(gemma->grpc_address())->Chat(low, [](const auto&) {});
  EXPECT_EQ(grpc_refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(grpc_refused.error_message(), "reasoning_effort: ")) << grpc_refused.error_message();
}

// tool_choice none keeps the tools in the prompt, as OpenAI and vLLM do, over both APIs: the prompt is the reference
// rendering of the conversation with its tools; a server started with --exclude_tools_when_tool_choice_none leaves
// them out, as if the request had none.
TEST(ChatServer, ToolChoiceNoneKeepsTheToolsInThePromptUnlessTheServerLeavesThemOut) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  const ordered_json conversation = ChatFixture("cases.json")["conversations"]["tools"];
  const auto prompts = [&](const ServerProcess& server, bool with_tools) {  // over HTTP, then over gRPC
    ordered_json body = {{"model", "qwen3-tiny"}, {"messages", conversation["messages"]}, {"max_tokens", 1}, {"return_prompt", true}};
    if (with_tools) {
      body["tools"] = conversation["tools"];  // in the fixture's key order, as the reference renders them
      body["tool_choice"] = "none";
    }
    const HttpAnswer http = PostText(server, body.dump(), "/v1/chat/completions");
    EXPECT_EQ(http.status, 200) << http.body;
    arach::v1::ChatRequest request = GrpcChat(conversation["messages"], 1);
    if (with_tools) {
      request.set_tools_json(conversation["tools"].dump());
      request.set_tool_choice_json("\"none\"");
    }
    std::string grpc_prompt;
    const grpc::Status status = ArachClient::Connect(server.grpc_address())->Chat(request, [&](const arach::v1::GenerateResponse& r) {
      if (r.has_finish()) grpc_prompt = r.finish().chat_prompt();
    });
    EXPECT_TRUE(status.ok()) << status.error_message();
    return std::vector<std::string>{http.status == 200 ? http.body["arach_prompt"].get<std::string>() : "", grpc_prompt};
  };
  auto server = StartChatServer(dir, "qwen3");
  ASSERT_NE(server, nullptr);
  const std::string with_tools = ReferenceText("qwen3", "tools");
  ASSERT_NE(with_tools.find("get_weather"), std::string::npos);
  EXPECT_EQ(prompts(*server, true), std::vector<std::string>(2, with_tools));

  auto excluding = StartChatServer(dir, "qwen3", {"--exclude_tools_when_tool_choice_none"});
  ASSERT_NE(excluding, nullptr);
  const std::vector<std::string> without_tools = prompts(*excluding, false);
  EXPECT_EQ(without_tools[0].find("get_weather"), std::string::npos) << without_tools[0];
  EXPECT_EQ(prompts(*excluding, true), without_tools);
}

// A request's own chat template (vLLM's chat_template): refused with a 400 / INVALID_ARGUMENT naming it unless the
// server trusts request templates; a trusting server renders the conversation with it (the model's special tokens
// defined) on HTTP chat, gRPC Chat and /tokenize alike, and names the line and column of one that does not parse.
TEST(ChatServer, ARequestsOwnTemplateIsRenderedWhereTheServerTrustsIt) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  const std::string own = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n{% endfor %}"
                          "{% if add_generation_prompt %}[assistant] {% endif %}";
  const std::string expected = "[system] Be brief.<|im_end|>\n[user] Name a colour.<|im_end|>\n[assistant] ";
  const json messages = json::parse(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}])");
  const json body = {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 1}, {"return_prompt", true}, {"chat_template", own}};
  const auto grpc_prompt = [&](const ServerProcess& server, const std::string& chat_template, grpc::Status* status) {
    arach::v1::ChatRequest request = GrpcChat(ordered_json::parse(messages.dump()), 1);
    request.set_chat_template(chat_template);
    std::string prompt;
    *status = ArachClient::Connect(server.grpc_address())->Chat(request, [&](const arach::v1::GenerateResponse& r) {
      if (r.has_finish()) prompt = r.finish().chat_prompt();
    });
    return prompt;
  };

  auto closed = StartChatServer(dir, "qwen3");
  ASSERT_NE(closed, nullptr);
  const json tokenize_body = {{"messages", messages}, {"chat_template", own}};
  for (const std::string route : {"/v1/chat/completions", "/tokenize"}) {
    const HttpAnswer refused = PostChat(*closed, route == "/tokenize" ? tokenize_body : body, route);
    EXPECT_EQ(refused.status, 400) << route << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], "chat_template") << route << refused.body;
  }
  grpc::Status status;
  grpc_prompt(*closed, own, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(status.error_message(), "chat_template: ")) << status.error_message();

  auto trusting = StartChatServer(dir, "qwen3", {"--trust_request_chat_template"});
  ASSERT_NE(trusting, nullptr);
  const HttpAnswer http = PostChat(*trusting, body);
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(http.body["arach_prompt"], expected);
  EXPECT_EQ(grpc_prompt(*trusting, own, &status), expected);
  EXPECT_TRUE(status.ok()) << status.error_message();
  const HttpAnswer tokenized = PostChat(*trusting, tokenize_body, "/tokenize");
  const HttpAnswer as_text = PostChat(*trusting, {{"prompt", expected}, {"add_special_tokens", false}}, "/tokenize");
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  EXPECT_EQ(tokenized.body["tokens"], as_text.body["tokens"]);
  const HttpAnswer without = PostChat(*trusting, {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 1}, {"return_prompt", true}});
  ASSERT_EQ(without.status, 200) << without.body;
  EXPECT_NE(without.body["arach_prompt"], expected) << "a request without one gets the model's template";

  json broken = body;
  broken["chat_template"] = "{% for m in messages %}{{ m.content }";
  const HttpAnswer unparsed = PostChat(*trusting, broken);
  EXPECT_EQ(unparsed.status, 400) << unparsed.body;
  EXPECT_EQ(unparsed.body["error"]["param"], "chat_template") << unparsed.body;
  EXPECT_EQ(unparsed.body["error"]["message"], "chat_template: line 1, column 37: unexpected '}'") << unparsed.body;
  grpc_prompt(*trusting, broken["chat_template"], &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "chat_template: line 1, column 37: unexpected '}'");
}

TEST(ChatServer, AModelWithoutATemplateRefusesChat) {
  ARACH_REQUIRE_FIXTURES();
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::FixturePath("gpt2-tiny"), "--kv_cache_bytes=33554432"});
  ASSERT_TRUE(server.ok()) << server.status();
  const HttpAnswer http = PostChat(**server, {{"model", "gpt2-tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(http.status, 400) << http.body;
  EXPECT_EQ(http.body["error"]["code"], "failed_precondition");
  EXPECT_NE(http.body["error"]["message"].get<std::string>().find("--chat_template"), std::string::npos);
  auto client = ArachClient::Connect((*server)->grpc_address());
  const grpc::Status status = client->Chat(GrpcChat(ordered_json::parse(R"([{"role": "user", "content": "hi"}])"), 4), [](const auto&) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

// vLLM's `documents` (gRPC: documents_json) reach a template that grounds its answer in them, as given; a
// malformed list is refused naming the field.
TEST(ChatServer, DocumentsReachARagTemplateOnBothProtocols) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  const std::string path = dir.path() + "/rag.jinja";
  std::ofstream(path) << "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                         "{%- if documents %}<|im_start|>system\n{% for d in documents %}[{{ loop.index }}] "
                         "{{ d.title | default('untitled') }}: {{ d.text }}\n{% endfor %}<|im_end|>\n{% endif %}"
                         "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::FixturePath("qwen3-tiny"), "--chat_template=" + path,
                                                           "--kv_cache_bytes=33554432"});
  ASSERT_TRUE(server.ok()) << server.status();
  const json documents = json::parse(R"([{"title": "Hubs", "text": "ARACH adds a hub stream."}, {"text": "It skips the sink."}])");
  const std::string expected = "<|im_start|>user\nWhat is ARACH?<|im_end|>\n<|im_start|>system\n[1] Hubs: ARACH adds a hub stream.\n"
                               "[2] untitled: It skips the sink.\n<|im_end|>\n<|im_start|>assistant\n";
  const json messages = json::parse(R"([{"role": "user", "content": "What is ARACH?"}])");
  const HttpAnswer http = PostChat(**server, {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 2}, {"return_prompt", true},
                                              {"documents", documents}});
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(http.body["arach_prompt"], expected);
  const HttpAnswer bad = PostChat(**server, {{"model", "qwen3-tiny"}, {"messages", messages}, {"documents", json::parse(R"([{"text": 1}])")}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.body["error"]["param"], "documents[0].text") << bad.body;

  auto client = ArachClient::Connect((*server)->grpc_address());
  arach::v1::ChatRequest request = GrpcChat(ordered_json::parse(messages.dump()), 2);
  request.set_documents_json(documents.dump());
  arach::v1::Finish finish;
  ASSERT_TRUE(client->Chat(request, [&](const arach::v1::GenerateResponse& r) {
    if (r.has_finish()) finish = r.finish();
  }).ok());
  EXPECT_EQ(finish.chat_prompt(), expected);
  request.set_documents_json(R"([{"title": ["x"]}])");
  const grpc::Status refused = client->Chat(request, [](const auto&) {});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "documents_json[0].title: must be a string");
}

TEST(ChatServer, AnUnsupportedTemplateStopsTheServerNamingFileLineAndColumn) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  const std::string path = dir.path() + "/bad.jinja";
  std::ofstream(path) << "{% for m in messages %}\n  {{ m.content | wordwrap(10) }}\n{% endfor %}";
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::FixturePath("qwen3-tiny"), "--chat_template=" + path});
  ASSERT_FALSE(server.ok());
  EXPECT_NE(std::string(server.status().message()).find(path + ": chat template: line 2, column 18: unsupported filter 'wordwrap'"),
            std::string::npos)
      << server.status();
}

}  // namespace
}  // namespace arach
