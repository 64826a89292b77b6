// Structured output, tool calls and reasoning over gRPC, against the HTTP API of the same server: arach-server on
// qwen3-tiny with the real Qwen3 template (Hermes tool calls, <think> reasoning) from ../shared/fixtures/chat,
// sampled at temperature 1. The gRPC StructuredOutput oneof constrains Generate and Chat; compile errors name
// structured_output; Chat with tools returns the calls in tool_calls with FINISH_REASON_TOOL_CALLS, the same as
// /v1/chat/completions; a <think> block goes to reasoning_text / reasoning_content, streamed or whole. The broad
// suites (JSON Schemas under Ajv, three tool-call syntaxes, the openai client) are tests/openai_client.
#include <httplib.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/match.h"
#include "client/arach_client.h"
#include "engine/constraint/constraint_compiler.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/qwen3_chat_server.h"
#include "tests/testing/server_process.h"

namespace arach {
namespace {

using client::ArachClient;
using json = nlohmann::json;
using testing::ServerProcess;

constexpr char kTools[] = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
  "properties": {"city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"],
  "additionalProperties": false}}}, {"type": "function", "function": {"name": "noop"}}])";

class StructuredOutputServer : public testing::SharedQwen3ChatServer<StructuredOutputServer> {
 protected:
  void SetUp() override {
    SharedQwen3ChatServer::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!StructuredOutputAvailable()) GTEST_SKIP() << "structured output not built: " << StructuredOutputBackend();
  }

  struct Streamed {
    grpc::Status status;
    std::string text, reasoning;
    std::vector<arach::v1::ToolCall> calls;
    arach::v1::Finish finish;
  };
  static Streamed Collect(const std::function<grpc::Status(const std::function<void(const arach::v1::GenerateResponse&)>&)>& call) {
    Streamed out;
    out.status = call([&](const arach::v1::GenerateResponse& r) {
      out.text += r.text();
      out.reasoning += r.reasoning_text();
      for (const arach::v1::ToolCall& c : r.tool_calls()) out.calls.push_back(c);
      if (r.has_finish()) out.finish = r.finish();
    });
    return out;
  }
  // `body` as written: an ordered_json keeps the tools' key order, which the template's tojson writes into the prompt.
  static json PostChat(const nlohmann::ordered_json& body) {
    httplib::Client client("http://" + server_->http_address());
    client.set_read_timeout(120, 0);
    httplib::Result r = client.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!r) return json();
    json out = json::parse(r->body, nullptr, false);
    out["http_status"] = r->status;
    return out;
  }
  static arach::v1::ChatRequest UserChat(const std::string& text, uint64_t seed) {
    arach::v1::ChatRequest request;
    arach::v1::ChatMessage* message = request.add_messages();
    message->set_role("user");
    message->set_content(text);
    request.set_chat_template_kwargs_json(R"({"enable_thinking": false})");
    request.mutable_generation()->set_max_tokens(120);
    request.mutable_generation()->mutable_sampling()->set_temperature(1.0f);
    request.mutable_generation()->mutable_sampling()->set_seed(seed);
    return request;
  }

};

TEST_F(StructuredOutputServer, GrpcGenerateFollowsTheRegexAndStops) {
  auto client = ArachClient::Connect(server_->grpc_address());
  const std::regex re("[a-z]{2,5}-[0-9]{2}");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    arach::v1::GenerateRequest request;
    request.set_text("Code:");
    request.set_max_tokens(40);
    request.mutable_sampling()->set_temperature(1.0f);
    request.mutable_sampling()->set_seed(seed);
    request.mutable_structured_output()->set_regex("[a-z]{2,5}-[0-9]{2}");
    const Streamed out = Collect([&](const auto& on) { return client->Generate(request, on); });
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    EXPECT_EQ(out.finish.reason(), arach::v1::FINISH_REASON_STOP);
    EXPECT_TRUE(std::regex_match(out.text, re)) << out.text;
  }
}

TEST_F(StructuredOutputServer, GrpcChoiceAndJsonSchema) {
  auto client = ArachClient::Connect(server_->grpc_address());
  arach::v1::ChatRequest chat = UserChat("positive or negative?", 3);
  chat.mutable_generation()->mutable_structured_output()->mutable_choice()->add_choices("positive");
  chat.mutable_generation()->mutable_structured_output()->mutable_choice()->add_choices("negative");
  Streamed out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_TRUE(out.text == "positive" || out.text == "negative") << out.text;

  chat = UserChat("a person", 5);
  chat.mutable_generation()->mutable_structured_output()->set_json_schema(
      R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["age"]})");
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_EQ(out.finish.reason(), arach::v1::FINISH_REASON_STOP) << out.text;
  const json value = json::parse(out.text, nullptr, false);
  ASSERT_TRUE(value.is_object()) << out.text;
  EXPECT_EQ(value.size(), 1u) << "strict by default: no property the schema does not name";
  EXPECT_TRUE(value["age"].is_number_integer() && value["age"] >= 0 && value["age"] <= 99) << out.text;
}

TEST_F(StructuredOutputServer, GrpcCompileErrorsNameTheField) {
  auto client = ArachClient::Connect(server_->grpc_address());
  arach::v1::GenerateRequest request;
  request.set_text("x");
  request.mutable_structured_output()->set_regex("(unclosed");
  Streamed out = Collect([&](const auto& on) { return client->Generate(request, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message().rfind("structured_output: the regex cannot be compiled", 0), 0u) << out.status.error_message();

  request.mutable_structured_output()->set_json_schema(std::string(100000, '['));
  out = Collect([&](const auto& on) { return client->Generate(request, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "structured_output.json_schema: nests lists and objects deeper than 64 levels")
      << "refused before xgrammar's recursive parser sees it (it took the server down)";

  request.mutable_structured_output()->set_regex("[a-z]+");
  request.mutable_structured_output()->set_strict(false);
  out = Collect([&](const auto& on) { return client->Generate(request, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "structured_output.strict: applies to json_schema only");

  arach::v1::ChatRequest chat = UserChat("x", 1);
  chat.mutable_generation()->mutable_structured_output()->set_json_schema("{\"type\": ");
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(),
            "generation.structured_output.json_schema: is not valid JSON (parse error at line 1, column 10: syntax "
            "error while parsing value - unexpected end of input; expected '[', '{', or a literal)");

  chat = UserChat("x", 1);
  chat.set_tools_json(kTools);
  chat.set_tool_choice_json(R"({"type": "function", "function": {"name": "missing"}})");
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "tool_choice_json.function.name: 'missing' is not one of the tools");

  // A conversation that breaks OpenAI's rules is refused naming the field, before the template sees it.
  chat = UserChat("x", 1);
  arach::v1::ChatMessage* turn = chat.add_messages();
  turn->set_role("assistant");
  turn->set_tool_calls_json("[1]");
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "messages[1].tool_calls_json[0]: must be an object");
  turn->clear_tool_calls_json();
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_message(), "messages[1].content: is required unless the turn has tool calls");

  // An error that quotes a long value the client sent is clipped (the client saw RESOURCE_EXHAUSTED "received initial
  // metadata size exceeds limit" for a 20 kB role, not the error).
  chat = UserChat("x", 1);
  chat.mutable_messages(0)->set_role(std::string(20000, 'r'));
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message().rfind("messages[0].role: 'rrr", 0), 0u) << out.status.error_message().substr(0, 100);
  EXPECT_LE(out.status.error_message().size(), 1027u);
  EXPECT_TRUE(absl::EndsWith(out.status.error_message(), "...")) << out.status.error_message().substr(0, 100);

  // chat_template_kwargs_json may not replace the template's own variables (add_generation_prompt was silently
  // overridden over gRPC, refused over HTTP).
  chat = UserChat("x", 1);
  chat.set_chat_template_kwargs_json(R"({"add_generation_prompt": false})");
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "chat_template_kwargs_json: may not set 'add_generation_prompt' (the template's own variable)");

  // A tool whose parameter schema cannot be compiled: the error names the tools on both APIs (it named
  // generation.structured_output on gRPC, nothing on HTTP: ": the structural_tag cannot be compiled").
  constexpr char kBadTools[] = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 1}}}}}])";
  chat = UserChat("x", 1);
  chat.set_tools_json(kBadTools);
  out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(out.status.error_message(), "tools_json: the structural tag cannot be compiled: Invalid range: minimum greater than maximum");
  const json http = PostChat({{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                              {"tools", nlohmann::ordered_json::parse(kBadTools)}});
  EXPECT_EQ(http["http_status"], 400) << http;
  EXPECT_EQ(http["error"]["param"], "tools") << http;
}

TEST_F(StructuredOutputServer, GrpcToolCallsMatchTheHttpAnswer) {
  auto client = ArachClient::Connect(server_->grpc_address());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    arach::v1::ChatRequest chat = UserChat("weather in Oslo?", seed);
    chat.set_tools_json(kTools);
    chat.set_tool_choice_json(R"("required")");
    chat.set_parallel_tool_calls(false);
    const Streamed out = Collect([&](const auto& on) { return client->Chat(chat, on); });
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    EXPECT_EQ(out.finish.reason(), arach::v1::FINISH_REASON_TOOL_CALLS) << out.text;
    ASSERT_EQ(out.calls.size(), 1u) << out.text;
    const arach::v1::ToolCall& call = out.calls[0];
    EXPECT_EQ(call.id().rfind("call_", 0), 0u);
    EXPECT_EQ(call.index(), 0u);
    const json arguments = json::parse(call.arguments_json(), nullptr, false);
    ASSERT_TRUE(arguments.is_object()) << call.arguments_json();
    if (call.name() == "get_weather") {
      EXPECT_TRUE(arguments["unit"] == "c" || arguments["unit"] == "f") << call.arguments_json();
      EXPECT_TRUE(arguments["city"].is_string()) << call.arguments_json();
    } else {
      EXPECT_EQ(call.name(), "noop");
    }
    EXPECT_TRUE(out.text.empty()) << "required: the turn is its calls";

    const json http = PostChat({{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "weather in Oslo?"}}}},
                                {"tools", nlohmann::ordered_json::parse(kTools)}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
                                {"chat_template_kwargs", {{"enable_thinking", false}}}, {"max_tokens", 120}, {"temperature", 1},
                                {"seed", seed}});
    ASSERT_EQ(http["http_status"], 200) << http;
    const json& choice = http["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    EXPECT_TRUE(choice["message"]["content"].is_null());
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], call.name());
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], call.arguments_json());
  }
}

// Tools (auto) beside a response format, as OpenAI's structured outputs with function calling (the OpenAI Agents
// SDK sends both): the turn is either calls or content in the format, never free text. The first token decides:
// logit_bias favouring `<tool_call>` makes a call, favouring `{` the content; both held to their schemas.
TEST_F(StructuredOutputServer, ToolsBesideAResponseFormatGiveEitherCallsOrContentInTheFormat) {
  std::ifstream tokenizer_file(testing::FixturePath("qwen3-tiny/tokenizer.json"));
  const json tokenizer = json::parse(tokenizer_file);
  int tool_call_token = -1;
  for (const json& added : tokenizer["added_tokens"]) {
    if (added["content"] == "<tool_call>") tool_call_token = added["id"].get<int>();
  }
  ASSERT_GE(tool_call_token, 0);
  const int brace_token = tokenizer["model"]["vocab"]["{"].get<int>();
  const nlohmann::ordered_json schema = {{"type", "object"},
                                         {"properties", {{"answer", {{"enum", {"yes", "no"}}}}}},
                                         {"required", {"answer"}}};
  auto client = ArachClient::Connect(server_->grpc_address());
  for (const bool call : {true, false}) {
    const int favoured = call ? tool_call_token : brace_token;
    const nlohmann::ordered_json body = {
        {"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "weather in Oslo?"}}}},
        {"tools", nlohmann::ordered_json::parse(kTools)}, {"tool_choice", "auto"}, {"parallel_tool_calls", false},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema}}}}},
        {"chat_template_kwargs", {{"enable_thinking", false}}}, {"max_tokens", 120}, {"temperature", 1}, {"seed", 7},
        {"logit_bias", {{std::to_string(favoured), 100}}}};
    const json http = PostChat(body);
    ASSERT_EQ(http["http_status"], 200) << http;
    const json& choice = http["choices"][0];
    if (call) {
      EXPECT_EQ(choice["finish_reason"], "tool_calls") << http;
      ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << http;
      const json arguments = json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(), nullptr, false);
      EXPECT_TRUE(arguments.is_object()) << http;
    } else {
      EXPECT_EQ(choice["finish_reason"], "stop") << http;
      EXPECT_FALSE(choice["message"].contains("tool_calls") && !choice["message"]["tool_calls"].empty()) << http;
      const json content = json::parse(choice["message"]["content"].get<std::string>(), nullptr, false);
      ASSERT_TRUE(content.is_object()) << http;
      EXPECT_TRUE(content["answer"] == "yes" || content["answer"] == "no") << http;
    }

    // gRPC Chat: the same turn (structured_output beside tools_json).
    arach::v1::ChatRequest chat = UserChat("weather in Oslo?", 7);
    chat.set_tools_json(kTools);
    chat.set_tool_choice_json(R"("auto")");
    chat.set_parallel_tool_calls(false);
    chat.mutable_generation()->mutable_structured_output()->set_json_schema(schema.dump());
    chat.mutable_generation()->mutable_structured_output()->set_strict(false);
    (*chat.mutable_generation()->mutable_sampling()->mutable_logit_bias())[favoured] = 100.0f;
    const Streamed out = Collect([&](const auto& on) { return client->Chat(chat, on); });
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    if (call) {
      EXPECT_EQ(out.finish.reason(), arach::v1::FINISH_REASON_TOOL_CALLS) << out.text;
      ASSERT_EQ(out.calls.size(), 1u) << out.text;
      EXPECT_EQ(out.calls[0].name(), choice["message"]["tool_calls"][0]["function"]["name"]) << "seeded: the same call";
    } else {
      EXPECT_TRUE(out.calls.empty());
      EXPECT_EQ(out.text, choice["message"]["content"]) << "seeded: the same content";
    }
  }
}

// A response format that cannot be compiled, beside tools with tool_choice auto (where both go into one
// constraint): the error names the format's parameter, not the tools, on both APIs.
TEST_F(StructuredOutputServer, ABadFormatBesideToolsIsNamedAsTheFormat) {
  const json bad_schema = json::parse(R"({"type": "object", "properties": {"a": {"$ref": "#/defs/nope"}}})");
  const json answer = PostChat({{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 4},
                                {"tools", nlohmann::ordered_json::parse(kTools)}, {"tool_choice", "auto"},
                                {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", bad_schema}}}}}});
  EXPECT_EQ(answer["http_status"], 400) << answer;
  EXPECT_EQ(answer["error"]["param"], "response_format.json_schema.schema") << answer;

  auto client = ArachClient::Connect(server_->grpc_address());
  arach::v1::ChatRequest chat = UserChat("x", 1);
  chat.set_tools_json(kTools);
  chat.set_tool_choice_json(R"("auto")");
  chat.mutable_generation()->mutable_structured_output()->set_json_schema(bad_schema.dump());
  const Streamed out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(out.status.error_message(), "generation.structured_output: ")) << out.status.error_message();
}

// A turn that starts inside <think> (here a prefill that opened it; a template may too) takes tools with
// tool_choice required, and auto beside a response format (once refused): its reasoning is read apart, and the
// constraint holds the calls or the format for after </think> (tool_call_constraint_test walks that constraint).
TEST_F(StructuredOutputServer, ATurnThatStartsInsideReasoningTakesTools) {
  const nlohmann::ordered_json schema = {{"type", "object"}, {"properties", {{"answer", {{"enum", {"yes", "no"}}}}}}, {"required", {"answer"}}};
  for (const bool with_format : {false, true}) {
    SCOPED_TRACE(with_format ? "auto beside a response format" : "required");
    nlohmann::ordered_json body = {
        {"model", "qwen3-tiny"},
        {"messages", {{{"role", "user"}, {"content", "weather in Oslo?"}}, {{"role", "assistant"}, {"content", "<think>\nThe user asks"}}}},
        {"continue_final_message", true}, {"tools", nlohmann::ordered_json::parse(kTools)},
        {"tool_choice", with_format ? "auto" : "required"}, {"parallel_tool_calls", false}, {"max_tokens", 16}, {"temperature", 1},
        {"seed", 5}};
    if (with_format) body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema}}}};
    const json http = PostChat(body);
    ASSERT_EQ(http["http_status"], 200) << http;
    const json& message = http["choices"][0]["message"];
    const std::string content = message["content"].is_string() ? message["content"].get<std::string>() : "";
    const std::string reasoning = message["reasoning_content"].is_string() ? message["reasoning_content"].get<std::string>() : "";
    EXPECT_EQ(content.find("</think>"), std::string::npos) << "the reasoning is read apart: " << http;
    if (http["choices"][0]["finish_reason"] == "length" && !message.contains("tool_calls")) {
      EXPECT_FALSE(reasoning.empty()) << "cut off inside the reasoning: " << http;
    }
  }
}

// A streamed turn of tool calls streams as OpenAI's: the call's first delta gives its index, id, type and name,
// later ones its index and more of its arguments, which joined are the whole answer's; no chunk is empty.
TEST_F(StructuredOutputServer, StreamedToolCallsComeAsTheyAreWrittenWithoutEmptyChunks) {
  const nlohmann::ordered_json body = {{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "weather in Oslo?"}}}},
                                       {"tools", nlohmann::ordered_json::parse(kTools)}, {"tool_choice", "required"},
                                       {"parallel_tool_calls", false}, {"chat_template_kwargs", {{"enable_thinking", false}}},
                                       {"max_tokens", 120}, {"temperature", 1}, {"seed", 5}};
  const json whole = PostChat(body);
  ASSERT_EQ(whole["http_status"], 200) << whole;
  ASSERT_EQ(whole["choices"][0]["finish_reason"], "tool_calls") << whole;

  nlohmann::ordered_json streamed = body;
  streamed["stream"] = true;
  httplib::Client http("http://" + server_->http_address());
  http.set_read_timeout(120, 0);
  httplib::Result r = http.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<json> chunks;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) == 0) chunks.push_back(json::parse(line.substr(6))["choices"][0]);
  }
  ASSERT_GE(chunks.size(), 2u) << r->body;
  EXPECT_EQ(chunks.front()["delta"]["role"], "assistant");
  json pieces = json::array();
  for (const json& chunk : chunks) {
    EXPECT_TRUE(!chunk["delta"].empty() || !chunk["finish_reason"].is_null()) << "an empty chunk: " << chunk;
    for (const json& piece : chunk["delta"].value("tool_calls", json::array())) pieces.push_back(piece);
  }
  EXPECT_EQ(chunks.back()["finish_reason"], "tool_calls");
  ASSERT_GT(pieces.size(), 2u) << "the arguments stream in pieces: " << r->body;
  const json& whole_call = whole["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(pieces[0]["index"], 0);
  EXPECT_EQ(pieces[0]["type"], "function");
  EXPECT_TRUE(pieces[0]["id"].is_string());
  EXPECT_EQ(pieces[0]["function"]["name"], whole_call["function"]["name"]) << "seeded: the same call";
  std::string arguments;
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i]["index"], 0) << pieces[i];
    if (i > 0) {
      EXPECT_EQ(pieces[i].size(), 2u) << "later pieces carry the index and more arguments only: " << pieces[i];
      EXPECT_EQ(pieces[i]["function"].size(), 1u) << pieces[i];
    }
    arguments += pieces[i]["function"]["arguments"].get<std::string>();
  }
  EXPECT_EQ(arguments, whole_call["function"]["arguments"]);
  EXPECT_TRUE(json::parse(arguments).is_object()) << arguments;
}

// The regex makes the model write a <think> block first, so the reasoning split is checked on any model.
TEST_F(StructuredOutputServer, ThinkBlocksBecomeReasoningOnBothApis) {
  const std::string regex = "<think>\n[a-z]{1,8}\n</think>\n\nanswer [0-9]";
  auto client = ArachClient::Connect(server_->grpc_address());
  arach::v1::ChatRequest chat = UserChat("think, then answer", 2);
  chat.set_chat_template_kwargs_json("{}");
  chat.mutable_generation()->mutable_structured_output()->set_regex(regex);
  const Streamed out = Collect([&](const auto& on) { return client->Chat(chat, on); });
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_TRUE(std::regex_match(out.reasoning, std::regex("\n[a-z]{1,8}\n"))) << out.reasoning;
  EXPECT_TRUE(std::regex_match(out.text, std::regex("answer [0-9]"))) << out.text;

  const json body = {{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "think, then answer"}}}},
                     {"structured_outputs", {{"regex", regex}}}, {"max_tokens", 120}, {"temperature", 1}, {"seed", 2}};
  const json whole = PostChat(body);
  ASSERT_EQ(whole["http_status"], 200) << whole;
  EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], out.reasoning);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], out.text);

  json streamed = body;
  streamed["stream"] = true;
  httplib::Client http("http://" + server_->http_address());
  httplib::Result r = http.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string reasoning, content;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) != 0) continue;
    const json chunk = json::parse(line.substr(6));
    for (const json& c : chunk["choices"]) {
      reasoning += c["delta"].value("reasoning_content", "");
      content += c["delta"].value("content", "");
    }
  }
  EXPECT_EQ(reasoning, out.reasoning);
  EXPECT_EQ(content, out.text);
}

}  // namespace
}  // namespace arach
