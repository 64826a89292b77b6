// The OpenAI Responses API (/v1/responses) end to end: arach-server on qwen3-tiny with the real Qwen3 template
// (../shared/fixtures/chat). A response is the chat turn /v1/chat/completions answers for the same conversation
// (greedy: the same text, usage and finish); a stream's named events come in sequence and assemble to the
// whole answer; function calls go round the loop (the calls sent back with their outputs render the conversation
// chat renders); errors name the Responses API's parameters in OpenAI's shape, and a stored response's routes say
// that nothing is stored; with --responses_store_bytes, responses are kept per key, continued, retrieved and
// deleted. The openai client's own responses helpers: tests/openai_client/responses.mjs.
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_split.h"
#include "client/event_stream.h"
#include "engine/constraint/constraint_compiler.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/qwen3_chat_server.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;
using testing::ServerProcess;

// A streamed answer: each event's name and data.
struct StreamEvent {
  std::string name;
  json data;
};

// The texts of a response's output items of `type` ("message": output_text, "reasoning": reasoning_text), joined.
std::string TextOf(const json& response, const std::string& type) {
  std::string text;
  for (const json& item : response["output"]) {
    if (item["type"] != type) continue;
    for (const json& part : item["content"]) text += part["text"].get<std::string>();
  }
  return text;
}

class ResponsesServer : public testing::SharedQwen3ChatServer<ResponsesServer> {
 protected:
  static HttpAnswer Post(const std::string& path, const nlohmann::ordered_json& body) {
    return testing::HttpSend(server_->http_address(), "POST", path, body.dump());
  }
  static std::vector<StreamEvent> PostStream(const nlohmann::ordered_json& body) {
    httplib::Client client("http://" + server_->http_address());
    client.set_read_timeout(120, 0);
    httplib::Result r = client.Post("/v1/responses", body.dump(), "application/json");
    std::vector<StreamEvent> events;
    if (!r || r->status != 200) {
      ADD_FAILURE() << "stream: " << (r ? r->body : "no answer");
      return events;
    }
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    for (absl::string_view block : absl::StrSplit(r->body, "\n\n", absl::SkipEmpty())) {
      StreamEvent event;
      for (absl::string_view line : absl::StrSplit(block, '\n')) {
        if (absl::ConsumePrefix(&line, "event: ")) event.name = std::string(line);
        if (absl::ConsumePrefix(&line, "data: ")) event.data = json::parse(line, nullptr, false);
      }
      if (!event.name.empty() || !event.data.is_null()) events.push_back(std::move(event));
    }
    return events;
  }

};

TEST_F(ResponsesServer, AResponseIsTheChatTurnChatCompletionsAnswers) {
  for (const bool thinking : {false, true}) {
    SCOPED_TRACE(thinking ? "thinking" : "not thinking");
    const json kwargs = {{"enable_thinking", thinking}};
    const HttpAnswer response = Post("/v1/responses", {{"model", "qwen3-tiny"}, {"instructions", "Be brief."}, {"input", "Tell me a story."},
                                                       {"max_output_tokens", 24}, {"temperature", 0}, {"chat_template_kwargs", kwargs}});
    const HttpAnswer chat = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", {{{"role", "system"}, {"content", "Be brief."}},
                                                                                                  {{"role", "user"}, {"content", "Tell me a story."}}}},
                                                          {"max_tokens", 24}, {"temperature", 0}, {"chat_template_kwargs", kwargs}});
    ASSERT_EQ(response.status, 200) << response.body;
    ASSERT_EQ(chat.status, 200) << chat.body;
    const json& r = response.body;
    const json& message = chat.body["choices"][0]["message"];
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u) << r["id"];
    EXPECT_EQ(TextOf(r, "message"), message["content"].is_string() ? message["content"].get<std::string>() : "");
    EXPECT_EQ(TextOf(r, "reasoning"), message["reasoning_content"].is_string() ? message["reasoning_content"].get<std::string>() : "");
    EXPECT_EQ(r["usage"]["input_tokens"], chat.body["usage"]["prompt_tokens"]);
    EXPECT_EQ(r["usage"]["output_tokens"], chat.body["usage"]["completion_tokens"]);
    EXPECT_EQ(r["usage"]["total_tokens"], chat.body["usage"]["total_tokens"]);
    const bool cut_off = chat.body["choices"][0]["finish_reason"] == "length";
    EXPECT_EQ(r["status"], cut_off ? "incomplete" : "completed");
    const json incomplete_details = cut_off ? json{{"reason", "max_output_tokens"}} : json(nullptr);
    EXPECT_EQ(r["incomplete_details"], incomplete_details);
    EXPECT_EQ(r["instructions"], "Be brief.");
    EXPECT_EQ(r["max_output_tokens"], 24);
    EXPECT_EQ(r["store"], false) << "nothing is stored";
    EXPECT_EQ(response.header("x-arach-variant"), "base");
  }
}

TEST_F(ResponsesServer, StreamedEventsComeInSequenceAndAssembleToTheWholeAnswer) {
  const nlohmann::ordered_json body = {{"model", "qwen3-tiny"}, {"input", "Hello there"}, {"max_output_tokens", 40},
                                       {"temperature", 1}, {"seed", 7}};
  const HttpAnswer whole = Post("/v1/responses", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  nlohmann::ordered_json streamed_body = body;
  streamed_body["stream"] = true;
  const std::vector<StreamEvent> events = PostStream(streamed_body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0].name, "response.created");
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(events[1].name, "response.in_progress");
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data["type"], events[i].name) << "the event's name is its type";
    EXPECT_EQ(events[i].data["sequence_number"], i);
    if (events[i].name == "response.output_text.delta") text += events[i].data["delta"].get<std::string>();
  }
  const json& final_response = events.back().data["response"];
  EXPECT_TRUE(events.back().name == "response.completed" || events.back().name == "response.incomplete") << events.back().name;
  EXPECT_EQ(final_response["status"], whole.body["status"]);
  EXPECT_EQ(text, TextOf(final_response, "message"));
  EXPECT_EQ(text, TextOf(whole.body, "message")) << "seeded: the stream says what the whole answer says";
  EXPECT_EQ(final_response["usage"], whole.body["usage"]);
  EXPECT_EQ(final_response["output"].size(), whole.body["output"].size());
}

TEST_F(ResponsesServer, FunctionCallsGoRoundTheLoopAsChatsToolCallsDo) {
  if (!StructuredOutputAvailable()) GTEST_SKIP() << "tool calls need structured output: " << StructuredOutputBackend();
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([{"type": "function", "name": "get_weather",
      "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
      "required": ["city"], "additionalProperties": false}}])");
  const nlohmann::ordered_json user = {{"role", "user"}, {"content", "Weather in Paris?"}};
  const json kwargs = {{"enable_thinking", false}};
  const HttpAnswer first = Post("/v1/responses", {{"model", "qwen3-tiny"}, {"input", {user}}, {"tools", tools}, {"tool_choice", "required"},
                                                  {"parallel_tool_calls", false}, {"max_output_tokens", 60}, {"temperature", 1}, {"seed", 3},
                                                  {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.body["status"], "completed") << first.body;
  nlohmann::ordered_json input = {user};
  nlohmann::ordered_json chat_calls = nlohmann::ordered_json::array();
  for (const json& item : first.body["output"]) {
    if (item["type"] != "function_call") continue;
    EXPECT_EQ(item["name"], "get_weather");
    EXPECT_EQ(item["status"], "completed");
    const json arguments = json::parse(item["arguments"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(arguments.is_object() && arguments["city"].is_string()) << item;
    input.push_back(nlohmann::ordered_json::parse(item.dump()));  // sent back as it came
    chat_calls.push_back({{"id", item["call_id"]}, {"type", "function"},
                          {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
  }
  ASSERT_EQ(chat_calls.size(), 1u) << first.body;
  input.push_back({{"type", "function_call_output"}, {"call_id", chat_calls[0]["id"]}, {"output", "Sunny, 21 C"}});

  // The next turn: greedy, its answer is the chat turn's for the same conversation.
  const HttpAnswer second = Post("/v1/responses", {{"model", "qwen3-tiny"}, {"input", input}, {"tools", tools}, {"max_output_tokens", 16},
                                                   {"temperature", 0}, {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(second.status, 200) << second.body;
  nlohmann::ordered_json chat_tools = nlohmann::ordered_json::array();
  for (const auto& tool : tools) {
    nlohmann::ordered_json function = tool;
    function.erase("type");
    chat_tools.push_back({{"type", "function"}, {"function", function}});
  }
  const HttpAnswer chat = Post("/v1/chat/completions",
                               {{"model", "qwen3-tiny"},
                                {"messages", {user, {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", chat_calls}},
                                              {{"role", "tool"}, {"tool_call_id", chat_calls[0]["id"]}, {"content", "Sunny, 21 C"}}}},
                                {"tools", chat_tools}, {"max_tokens", 16}, {"temperature", 0}, {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(second.body["usage"]["input_tokens"], chat.body["usage"]["prompt_tokens"]) << "the same prompt";
  const json& message = chat.body["choices"][0]["message"];
  EXPECT_EQ(TextOf(second.body, "message"), message["content"].is_string() ? message["content"].get<std::string>() : "");
}

// include ["message.output_text.logprobs"]: the message's output_text carries the log-probs of its tokens, the
// entries chat completions gives for the same greedy turn (where the whole turn is content), streamed with the
// deltas; a turn that only calls a function has no message, so no log-probs.
TEST_F(ResponsesServer, AMessagesLogprobsAreThoseOfItsTokens) {
  const json kwargs = {{"enable_thinking", false}};
  const nlohmann::ordered_json body = {{"model", "qwen3-tiny"}, {"input", "Name a colour."}, {"max_output_tokens", 12}, {"temperature", 0},
                                       {"include", {"message.output_text.logprobs"}}, {"top_logprobs", 2}, {"chat_template_kwargs", kwargs}};
  const HttpAnswer response = Post("/v1/responses", body);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body["top_logprobs"], 2);
  json entries = json::array();
  std::string tokens;
  for (const json& item : response.body["output"]) {
    if (item["type"] != "message") continue;
    for (const json& entry : item["content"][0]["logprobs"]) {
      entries.push_back(entry);
      tokens += entry["token"].get<std::string>();
      EXPECT_EQ(entry["top_logprobs"].size(), 2u) << entry;
    }
  }
  ASSERT_FALSE(entries.empty()) << response.body;
  EXPECT_EQ(tokens, TextOf(response.body, "message")) << "the entries are the message's tokens";

  const HttpAnswer chat = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "Name a colour."}}}},
                                                        {"max_tokens", 12}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2},
                                                        {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  const json& chat_entries = chat.body["choices"][0]["logprobs"]["content"];
  if (chat.body["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(entries, chat_entries);
  } else {  // (chat also lists the end-of-turn token, which says nothing in the message)
    ASSERT_GE(chat_entries.size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(entries[i], chat_entries[i]) << i;
  }

  nlohmann::ordered_json streamed_body = body;
  streamed_body["stream"] = true;
  json streamed = json::array();
  for (const StreamEvent& event : PostStream(streamed_body)) {
    if (event.name != "response.output_text.delta") continue;
    for (const json& entry : event.data["logprobs"]) streamed.push_back(entry);
  }
  EXPECT_EQ(streamed, entries) << "the deltas carry their tokens' log-probs";

  if (!StructuredOutputAvailable()) return;
  const HttpAnswer called = Post("/v1/responses", {{"model", "qwen3-tiny"}, {"input", "Weather in Paris?"},
                                                   {"tools", {{{"type", "function"}, {"name", "get_weather"}}}}, {"tool_choice", "required"},
                                                   {"parallel_tool_calls", false}, {"max_output_tokens", 40}, {"temperature", 0},
                                                   {"include", {"message.output_text.logprobs"}}, {"chat_template_kwargs", kwargs}});
  ASSERT_EQ(called.status, 200) << called.body;
  for (const json& item : called.body["output"]) {
    EXPECT_EQ(item["type"], "function_call") << called.body;
  }
}

// truncation "auto": a conversation past the model's context loses its oldest exchanges (here the first, whose
// question alone has more tokens than the model's 40,960 positions) and is answered as the rest of it is (greedy:
// the same text and input tokens); "disabled", the default, refuses it naming input.
TEST_F(ResponsesServer, TruncationAutoDropsTheOldestExchangesUntilTheConversationFits) {
  std::string too_long;
  for (int i = 0; i < 25000; ++i) too_long += " " + std::to_string(i);
  const json kwargs = {{"enable_thinking", false}};
  const json rest = {{{"role", "user"}, {"content", "Name a colour."}}};
  json whole = {{{"role", "user"}, {"content", too_long}}, {{"role", "assistant"}, {"content", "Noted."}}};
  whole.push_back(rest[0]);
  const auto ask = [&](const json& input, const std::string& truncation) {
    return Post("/v1/responses", {{"model", "qwen3-tiny"}, {"instructions", "Be brief."}, {"input", input}, {"max_output_tokens", 12},
                                  {"temperature", 0}, {"chat_template_kwargs", kwargs}, {"truncation", truncation}});
  };
  const HttpAnswer truncated = ask(whole, "auto");
  const HttpAnswer short_one = ask(rest, "disabled");
  ASSERT_EQ(truncated.status, 200) << truncated.body.dump().substr(0, 300);
  ASSERT_EQ(short_one.status, 200) << short_one.body;
  EXPECT_EQ(truncated.body["truncation"], "auto");
  EXPECT_EQ(short_one.body["truncation"], "disabled");
  EXPECT_EQ(TextOf(truncated.body, "message"), TextOf(short_one.body, "message"));
  EXPECT_EQ(truncated.body["usage"]["input_tokens"], short_one.body["usage"]["input_tokens"]);
  const HttpAnswer refused = ask(whole, "disabled");
  EXPECT_EQ(refused.status, 400) << refused.body.dump().substr(0, 300);
  EXPECT_EQ(refused.body["error"]["param"], "input");
}

// POST /v1/responses/input_tokens counts the input tokens the same request's answer says it used: instructions, tools,
// reasoning effort, a truncated conversation alike, and one too long to be answered; parameters that do not shape the
// prompt are refused naming them.
TEST_F(ResponsesServer, InputTokensCountsWhatTheResponseUses) {
  std::string too_long;
  for (int i = 0; i < 25000; ++i) too_long += " " + std::to_string(i);
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([{"type": "function", "name": "get_weather",
      "description": "The weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}])");
  const std::vector<nlohmann::ordered_json> requests = {
      {{"model", "qwen3-tiny"}, {"input", "Hello there"}},
      {{"model", "qwen3-tiny"}, {"instructions", "Be brief."}, {"input", "Hello there"}, {"reasoning", {{"effort", "low"}}}},
      {{"model", "qwen3-tiny"}, {"input", "Weather in Paris?"}, {"tools", tools}, {"tool_choice", "none"}},
      {{"model", "qwen3-tiny"}, {"input", "Weather in Paris?"}, {"tools", tools}, {"chat_template_kwargs", {{"enable_thinking", false}}}},
      {{"model", "qwen3-tiny"}, {"truncation", "auto"},
       {"input", {{{"role", "user"}, {"content", too_long}}, {{"role", "assistant"}, {"content", "Noted."}},
                  {{"role", "user"}, {"content", "Name a colour."}}}}},
  };
  std::set<int> counts;
  for (const nlohmann::ordered_json& body : requests) {
    const HttpAnswer counted = Post("/v1/responses/input_tokens", body);
    ASSERT_EQ(counted.status, 200) << body.dump().substr(0, 200) << " -> " << counted.body;
    EXPECT_EQ(counted.body["object"], "response.input_tokens");
    nlohmann::ordered_json asked = body;
    asked["max_output_tokens"] = 1;
    const HttpAnswer answered = Post("/v1/responses", asked);
    ASSERT_EQ(answered.status, 200) << answered.body.dump().substr(0, 300);
    EXPECT_EQ(counted.body["input_tokens"], answered.body["usage"]["input_tokens"]) << body.dump().substr(0, 200);
    counts.insert(counted.body["input_tokens"].get<int>());
  }
  EXPECT_EQ(counts.size(), requests.size()) << "each request's count is its own";
  for (const char* param : {"max_output_tokens", "temperature", "stream", "store", "background", "include"}) {
    const HttpAnswer refused = Post("/v1/responses/input_tokens", {{"model", "qwen3-tiny"}, {"input", "x"}, {param, nullptr}});
    EXPECT_EQ(refused.status, 400) << param << ": " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << refused.body;
  }
  // A conversation longer than the context is counted (that is what a client asks the count for); its response is refused.
  const HttpAnswer too_many = Post("/v1/responses/input_tokens", {{"model", "qwen3-tiny"}, {"input", too_long}});
  ASSERT_EQ(too_many.status, 200) << too_many.body.dump().substr(0, 300);
  EXPECT_GT(too_many.body["input_tokens"].get<int>(), 40960);
  EXPECT_EQ(Post("/v1/responses", {{"model", "qwen3-tiny"}, {"input", too_long}}).status, 400);
  EXPECT_EQ(Post("/v1/responses/input_tokens", {{"model", "gpt-5"}, {"input", "x"}}).status, 404);
}

TEST_F(ResponsesServer, ErrorsNameTheResponsesApisParameters) {
  std::string too_long;  // more tokens than the model's 40,960 positions
  for (int i = 0; i < 25000; ++i) too_long += " " + std::to_string(i);
  const std::vector<std::pair<nlohmann::ordered_json, std::string>> cases = {
      {{{"model", "qwen3-tiny"}, {"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}},
       "input[0].content[0].type"},
      {{{"model", "qwen3-tiny"}, {"input", "x"}, {"max_output_tokens", 0}}, "max_output_tokens"},
      {{{"model", "qwen3-tiny"}, {"input", "x"}, {"max_output_tokens", 5000}}, "max_output_tokens"},  // over --max_tokens_limit
      {{{"model", "qwen3-tiny"}, {"input", too_long}}, "input"},
      {{{"model", "qwen3-tiny"}, {"input", "x"}, {"previous_response_id", "resp_1"}}, "previous_response_id"},
      {{{"model", "qwen3-tiny"}, {"input", "x"}, {"temperature", -1}}, "temperature"},
      {{{"model", "qwen3-tiny"}, {"input", "x"}, {"background", true}}, "background"},  // (nothing is stored here)
  };
  for (const auto& [body, param] : cases) {
    const HttpAnswer answer = Post("/v1/responses", body);
    EXPECT_EQ(answer.status, 400) << body.dump().substr(0, 200) << " -> " << answer.body.dump().substr(0, 300);
    EXPECT_EQ(answer.body["error"]["param"], param) << answer.body.dump().substr(0, 300);
  }
  const HttpAnswer other_model = Post("/v1/responses", {{"model", "gpt-5"}, {"input", "x"}});
  EXPECT_EQ(other_model.status, 404) << other_model.body;
  // Nothing is stored: retrieving, deleting or cancelling a response says so.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/responses/resp_1"}, {"GET", "/v1/responses/resp_1/input_items"}, {"DELETE", "/v1/responses/resp_1"}}) {
    httplib::Client client("http://" + server_->http_address());
    httplib::Result r = method == "GET" ? client.Get(path) : client.Delete(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_NE(r->body.find("'resp_1' is not stored here"), std::string::npos) << path << ": " << r->body;
  }
}

// A test with a server of its own on qwen3-tiny with the real Qwen3 template that stores responses, with the keys
// alice (sk-alice) and bob (sk-bob).
class StoringServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    std::ofstream(dir_.File("keys")) << "alice:sk-alice\nbob:sk-bob\n";
    const std::string tmpl = dir_.File("qwen3.jinja");
    {
      std::ifstream in(testing::FixturePath("chat/templates.json"));
      std::stringstream text;
      text << in.rdbuf();
      std::ofstream(tmpl) << json::parse(text.str())["qwen3"]["template"].get<std::string>();
    }
    server_ = testing::StartServerOrFail(testing::ServerBinary(),
                                         {"--model=" + testing::FixturePath("qwen3-tiny"), "--chat_template=" + tmpl,
                                          "--kv_cache_bytes=33554432", "--api_key_file=" + dir_.File("keys"),
                                          "--responses_store_bytes=" + store_bytes_});
    ASSERT_NE(server_, nullptr);
  }
  // `method` `path` with `body` (none when null) to the server's HTTP API as the key `key`.
  HttpAnswer Send(const std::string& method, const std::string& path, const std::string& key, const json& body = nullptr) const {
    return testing::HttpSend(server_->http_address(), method, path, body.is_null() ? "" : body.dump(),
                             {{"Authorization", "Bearer " + key}});
  }
  // A streamed answer's status and events (their data), as Send asks for it; hangs up once `hang_up_after` came.
  struct EventsRead {
    int status = 0;
    std::vector<json> events;
  };
  EventsRead ReadEvents(const std::string& method, const std::string& path, const std::string& key, const json& body = nullptr,
                        size_t hang_up_after = SIZE_MAX) const {
    EventsRead read;
    read.status = client::SendForEvents(
                      server_->http_address(), method, path, body.is_null() ? "" : body.dump(),
                      [&](const std::string& data) {
                        read.events.push_back(json::parse(data, nullptr, false));
                        return read.events.size() < hang_up_after;
                      },
                      120, {{"Authorization", "Bearer " + key}})
                      .status;
    return read;
  }

  std::string store_bytes_ = "1048576";
  testing::ScopedTempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};
class StoredResponses : public StoringServer {};
class BackgroundResponses : public StoringServer {};
// A store a few answers fill.
class CrowdedStore : public StoringServer {
 protected:
  CrowdedStore() { store_bytes_ = "16384"; }
};

// --responses_store_bytes: a response asked with store (the default) is kept for the key that made it. The next turn
// with previous_response_id answers as the whole conversation sent again does (greedy); GET returns the response as
// answered (streamed ones too), GET .../input_items lists its own request's input, DELETE drops it; another key sees
// none of it; store false keeps nothing.
TEST_F(StoredResponses, AreContinuedRetrievedAndDeletedByTheirKeyOnly) {
  const json kwargs = {{"enable_thinking", false}};
  const json first_body = {{"model", "qwen3-tiny"}, {"instructions", "Be brief."}, {"input", "Name a colour."}, {"max_output_tokens", 8},
                           {"temperature", 0}, {"chat_template_kwargs", kwargs}};
  const HttpAnswer first = Send("POST", "/v1/responses", "sk-alice", first_body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.body["store"], true);
  const std::string first_id = first.body["id"];
  const HttpAnswer retrieved = Send("GET", "/v1/responses/" + first_id, "sk-alice");
  ASSERT_EQ(retrieved.status, 200) << retrieved.body;
  EXPECT_EQ(retrieved.body, first.body);

  // The next turn continues it; the same conversation sent whole (without the first turn's instructions, which
  // previous_response_id does not carry) answers alike.
  const json second_body = {{"model", "qwen3-tiny"}, {"previous_response_id", first_id}, {"input", "And another?"},
                            {"max_output_tokens", 8}, {"temperature", 0}, {"chat_template_kwargs", kwargs}};
  const HttpAnswer second = Send("POST", "/v1/responses", "sk-alice", second_body);
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.body["previous_response_id"], first_id);
  json count_body = second_body;
  for (const char* sampling : {"max_output_tokens", "temperature"}) count_body.erase(sampling);
  const HttpAnswer counted = Send("POST", "/v1/responses/input_tokens", "sk-alice", count_body);
  ASSERT_EQ(counted.status, 200) << counted.body;
  EXPECT_EQ(counted.body["input_tokens"], second.body["usage"]["input_tokens"]) << "the stored conversation counts";
  EXPECT_EQ(Send("POST", "/v1/responses/input_tokens", "sk-bob", count_body).body["error"]["param"], "previous_response_id")
      << "another key's";
  json whole_input = json::array({{{"role", "user"}, {"content", "Name a colour."}}});
  for (const json& item : first.body["output"]) whole_input.push_back(item);
  whole_input.push_back({{"role", "user"}, {"content", "And another?"}});
  const HttpAnswer stateless = Send("POST", "/v1/responses", "sk-alice",
                                    {{"model", "qwen3-tiny"}, {"input", whole_input}, {"max_output_tokens", 8}, {"temperature", 0},
                                     {"chat_template_kwargs", kwargs}, {"store", false}});
  ASSERT_EQ(stateless.status, 200) << stateless.body;
  EXPECT_EQ(stateless.body["store"], false);
  EXPECT_EQ(second.body["output"][0]["content"], stateless.body["output"][0]["content"]);
  EXPECT_EQ(second.body["usage"]["input_tokens"], stateless.body["usage"]["input_tokens"]);
  EXPECT_EQ(Send("GET", "/v1/responses/" + stateless.body["id"].get<std::string>(), "sk-alice").status, 404) << "store false keeps nothing";

  // A streamed turn is kept as its response.completed event says.
  json streamed_body = second_body;
  streamed_body["previous_response_id"] = second.body["id"];
  streamed_body["stream"] = true;
  const HttpAnswer stream = Send("POST", "/v1/responses", "sk-alice", streamed_body);
  ASSERT_EQ(stream.status, 200);
  const std::string events = stream.body.get<std::string>();
  const size_t completed = events.find("event: response.completed\ndata: ");
  const size_t incomplete = events.find("event: response.incomplete\ndata: ");
  const size_t at = std::min(completed, incomplete);
  ASSERT_NE(at, std::string::npos) << events;
  const size_t data = events.find("data: ", at) + 6;
  const json streamed = json::parse(events.substr(data, events.find('\n', data) - data))["response"];
  EXPECT_EQ(Send("GET", "/v1/responses/" + streamed["id"].get<std::string>(), "sk-alice").body, streamed);

  // Another key sees none of it.
  EXPECT_EQ(Send("GET", "/v1/responses/" + first_id, "sk-bob").status, 404);
  EXPECT_EQ(Send("DELETE", "/v1/responses/" + first_id, "sk-bob").status, 404);
  json bob = second_body;
  const HttpAnswer bob_continues = Send("POST", "/v1/responses", "sk-bob", bob);
  EXPECT_EQ(bob_continues.status, 400);
  EXPECT_EQ(bob_continues.body["error"]["param"], "previous_response_id") << bob_continues.body;

  // The input items of each response: its own request's only, with ids; another key gets none.
  const HttpAnswer first_items = Send("GET", "/v1/responses/" + first_id + "/input_items", "sk-alice");
  ASSERT_EQ(first_items.status, 200) << first_items.body;
  ASSERT_EQ(first_items.body["data"].size(), 1u) << first_items.body;
  EXPECT_EQ(first_items.body["data"][0]["type"], "message");
  EXPECT_EQ(first_items.body["data"][0]["role"], "user");
  EXPECT_EQ(first_items.body["data"][0]["content"], json::parse(R"([{"type": "input_text", "text": "Name a colour."}])"));
  EXPECT_EQ(first_items.body["first_id"], first_items.body["data"][0]["id"]);
  EXPECT_EQ(first_items.body["has_more"], false);
  const HttpAnswer second_items = Send("GET", "/v1/responses/" + second.body["id"].get<std::string>() + "/input_items", "sk-alice");
  ASSERT_EQ(second_items.status, 200) << second_items.body;
  ASSERT_EQ(second_items.body["data"].size(), 1u) << "not the continued response's: " << second_items.body;
  EXPECT_EQ(second_items.body["data"][0]["content"][0]["text"], "And another?");
  EXPECT_EQ(Send("GET", "/v1/responses/" + first_id + "/input_items", "sk-bob").status, 404);
  EXPECT_EQ(Send("GET", "/v1/responses/" + first_id + "/input_items?limit=0", "sk-alice").body["error"]["param"], "limit");
  const HttpAnswer deleted = Send("DELETE", "/v1/responses/" + first_id, "sk-alice");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.body, json({{"id", first_id}, {"object", "response"}, {"deleted", true}}));
  EXPECT_EQ(Send("GET", "/v1/responses/" + first_id, "sk-alice").status, 404);
  const HttpAnswer gone = Send("POST", "/v1/responses", "sk-alice", second_body);
  EXPECT_EQ(gone.status, 400);
  EXPECT_EQ(gone.body["error"]["param"], "previous_response_id") << gone.body;
}

// background: true (OpenAI's background mode): answered at once as queued, then polled: in progress once the engine
// has begun it, and finally the response the same request answers in the foreground (greedy). A running one is
// cancelled (and a cancel is idempotent), deleted (which cancels it first), or refused where it cannot be.
TEST_F(BackgroundResponses, RunApartArePolledAndCancelled) {
  // Polls the response until `done` says yes of its status (at most 60 s); its last state.
  const auto poll = [&](const std::string& id, const std::function<bool(const std::string&)>& done) {
    HttpAnswer got;
    for (int i = 0; i < 6000; ++i) {
      got = Send("GET", "/v1/responses/" + id, "sk-alice");
      if (got.status != 200 || done(got.body["status"].get<std::string>())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return got;
  };
  const json body = {{"model", "qwen3-tiny"}, {"input", "Name three colours."}, {"max_output_tokens", 12}, {"temperature", 0},
                     {"chat_template_kwargs", {{"enable_thinking", false}}}};
  json background_body = body;
  background_body["background"] = true;
  const HttpAnswer accepted = Send("POST", "/v1/responses", "sk-alice", background_body);
  ASSERT_EQ(accepted.status, 200) << accepted.body;
  EXPECT_EQ(accepted.body["status"], "queued");
  EXPECT_EQ(accepted.body["background"], true);
  EXPECT_EQ(accepted.body["output"], json::array());
  EXPECT_TRUE(accepted.body["usage"].is_null());
  const std::string id = accepted.body["id"];
  const HttpAnswer finished = poll(id, [](const std::string& status) { return status != "queued" && status != "in_progress"; });
  ASSERT_EQ(finished.status, 200) << finished.body;
  json foreground_body = body;
  foreground_body["store"] = false;
  const HttpAnswer foreground = Send("POST", "/v1/responses", "sk-alice", foreground_body);
  ASSERT_EQ(foreground.status, 200) << foreground.body;
  EXPECT_EQ(finished.body["status"], foreground.body["status"]) << finished.body;
  EXPECT_EQ(finished.body["output"][0]["content"], foreground.body["output"][0]["content"]);
  EXPECT_EQ(finished.body["usage"], foreground.body["usage"]);
  EXPECT_EQ(finished.body["background"], true);
  EXPECT_EQ(Send("POST", "/v1/responses/" + id + "/cancel", "sk-alice").body, finished.body) << "a finished one stays as it ended";

  // A long one: in progress once begun, then cancelled (twice: the same answer), while another key finds nothing.
  json long_body = background_body;
  long_body["max_output_tokens"] = 4000;
  long_body["min_tokens"] = 4000;
  const HttpAnswer long_accepted = Send("POST", "/v1/responses", "sk-alice", long_body);
  ASSERT_EQ(long_accepted.status, 200) << long_accepted.body;
  const std::string long_id = long_accepted.body["id"];
  EXPECT_EQ(poll(long_id, [](const std::string& status) { return status != "queued"; }).body["status"], "in_progress");
  const auto running = [&] {
    const auto metrics = testing::ScrapeMetrics(*server_);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? metrics->Sum("arach_responses_background_running") : -1;
  };
  EXPECT_EQ(running(), 1);
  EXPECT_EQ(Send("POST", "/v1/responses/" + long_id + "/cancel", "sk-bob").status, 404);
  const HttpAnswer cancelled = Send("POST", "/v1/responses/" + long_id + "/cancel", "sk-alice");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.body["status"], "cancelled");
  EXPECT_EQ(cancelled.body["id"], long_id);
  EXPECT_EQ(Send("GET", "/v1/responses/" + long_id, "sk-alice").body, cancelled.body);
  EXPECT_EQ(running(), 0);
  EXPECT_EQ(Send("POST", "/v1/responses/" + long_id + "/cancel", "sk-alice").body, cancelled.body);
  json continues = body;
  continues["previous_response_id"] = long_id;
  const HttpAnswer no_answer = Send("POST", "/v1/responses", "sk-alice", continues);
  EXPECT_EQ(no_answer.status, 400) << no_answer.body;
  EXPECT_EQ(no_answer.body["error"]["message"],
            "previous_response_id: '" + long_id + "' is cancelled: only an answered response is continued");
  EXPECT_NE(server_->Output().find("route=/v1/responses key=alice variant=base status=499"), std::string::npos)
      << "a cancelled one is logged as its client going away";

  // A request id used again while its background response runs is refused (the id is the response's).
  const httplib::Headers alice_dup = {{"Authorization", "Bearer sk-alice"}, {"x-request-id", "dup-1"}};
  const HttpAnswer dup_first = testing::HttpSend(server_->http_address(), "POST", "/v1/responses", long_body.dump(), alice_dup);
  ASSERT_EQ(dup_first.status, 200) << dup_first.body;
  EXPECT_EQ(dup_first.body["id"], "resp_dup-1");
  const HttpAnswer dup_again = testing::HttpSend(server_->http_address(), "POST", "/v1/responses", long_body.dump(), alice_dup);
  EXPECT_EQ(dup_again.status, 400) << dup_again.body;
  EXPECT_EQ(dup_again.body["error"]["message"],
            "a background response 'resp_dup-1' of this key is still running: its request id (x-request-id) was used again");
  EXPECT_EQ(Send("POST", "/v1/responses/resp_dup-1/cancel", "sk-alice").body["status"], "cancelled");

  // Deleting a running one cancels it first: it does not come back.
  const HttpAnswer doomed = Send("POST", "/v1/responses", "sk-alice", long_body);
  ASSERT_EQ(doomed.status, 200) << doomed.body;
  const std::string doomed_id = doomed.body["id"];
  ASSERT_EQ(Send("DELETE", "/v1/responses/" + doomed_id, "sk-alice").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Send("GET", "/v1/responses/" + doomed_id, "sk-alice").status, 404);

  // Refused: a stored response that did not run in the background is not cancelled; background without store.
  json stored_body = body;
  const HttpAnswer stored = Send("POST", "/v1/responses", "sk-alice", stored_body);
  ASSERT_EQ(stored.status, 200) << stored.body;
  const HttpAnswer not_background = Send("POST", "/v1/responses/" + stored.body["id"].get<std::string>() + "/cancel", "sk-alice");
  EXPECT_EQ(not_background.status, 400) << not_background.body;
  EXPECT_EQ(not_background.body["error"]["message"], "only background responses can be cancelled");
  json unstored_body = background_body;
  unstored_body["store"] = false;
  const HttpAnswer unstored = Send("POST", "/v1/responses", "sk-alice", unstored_body);
  EXPECT_EQ(unstored.status, 400) << unstored.body;
  EXPECT_EQ(unstored.body["error"]["param"], "background") << unstored.body;
}

// background with stream: the events come as they are made (queued first, in progress once the engine has begun it)
// and are kept with the response: GET ?stream=true reads them again from the one after any sequence number
// (starting_after) and follows those still to come. A client that hangs up leaves the response running; a cancel
// ends its stream with response.cancelled, as the response is kept.
TEST_F(BackgroundResponses, StreamedOnesAreReadAgainFromAnySequenceNumber) {
  const json body = {{"model", "qwen3-tiny"}, {"input", "Name three colours."}, {"max_output_tokens", 12}, {"temperature", 0},
                     {"chat_template_kwargs", {{"enable_thinking", false}}}, {"background", true}, {"stream", true}};
  const EventsRead streamed = ReadEvents("POST", "/v1/responses", "sk-alice", body);
  ASSERT_EQ(streamed.status, 200);
  ASSERT_GE(streamed.events.size(), 5u);
  EXPECT_EQ(streamed.events[0]["type"], "response.created");
  EXPECT_EQ(streamed.events[0]["response"]["status"], "queued");
  EXPECT_EQ(streamed.events[0]["response"]["background"], true);
  EXPECT_EQ(streamed.events[1]["type"], "response.queued");
  EXPECT_EQ(streamed.events[2]["type"], "response.in_progress");
  EXPECT_EQ(streamed.events[2]["response"]["status"], "in_progress");
  std::string text;
  for (size_t i = 0; i < streamed.events.size(); ++i) {
    EXPECT_EQ(streamed.events[i]["sequence_number"], i);
    if (streamed.events[i]["type"] == "response.output_text.delta") text += streamed.events[i]["delta"].get<std::string>();
  }
  const json& last = streamed.events.back();
  ASSERT_TRUE(last["type"] == "response.completed" || last["type"] == "response.incomplete") << last;
  EXPECT_EQ(text, TextOf(last["response"], "message"));
  json foreground_body = body;
  foreground_body.erase("background");
  foreground_body.erase("stream");
  foreground_body["store"] = false;
  const HttpAnswer foreground = Send("POST", "/v1/responses", "sk-alice", foreground_body);
  ASSERT_EQ(foreground.status, 200) << foreground.body;
  EXPECT_EQ(text, TextOf(foreground.body, "message")) << "greedy: the stream says what the foreground answer says";
  EXPECT_EQ(last["response"]["usage"], foreground.body["usage"]);

  // Kept: GET answers the last event's response; with stream=true the same events again, from any sequence number.
  const std::string id = last["response"]["id"];
  const std::string path = "/v1/responses/" + id;
  EXPECT_EQ(Send("GET", path, "sk-alice").body, last["response"]);
  const EventsRead again = ReadEvents("GET", path + "?stream=true", "sk-alice");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.events, streamed.events);
  const EventsRead tail = ReadEvents("GET", path + "?stream=true&starting_after=3", "sk-alice");
  EXPECT_EQ(tail.events, std::vector<json>(streamed.events.begin() + 4, streamed.events.end()));
  const EventsRead none = ReadEvents("GET", path + "?stream=true&starting_after=" + std::to_string(streamed.events.size() - 1), "sk-alice");
  EXPECT_EQ(none.status, 200);
  EXPECT_TRUE(none.events.empty()) << none.events.front();
  EXPECT_EQ(ReadEvents("GET", path + "?stream=true", "sk-bob").status, 404) << "another key's";
  const auto metrics = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_GE(metrics->Sum("arach_responses_stored"), 1);
  EXPECT_GT(metrics->Sum("arach_responses_stored_bytes"), 1000) << "its events count with it";

  // A long one: its client hangs up after the first events and it runs on; a later read follows it from there.
  json long_body = body;
  long_body["max_output_tokens"] = 4000;
  long_body["min_tokens"] = 4000;
  const EventsRead first = ReadEvents("POST", "/v1/responses", "sk-alice", long_body, /*hang_up_after=*/3);
  ASSERT_EQ(first.events.size(), 3u);
  EXPECT_EQ(first.events[2]["type"], "response.in_progress");
  const std::string long_path = "/v1/responses/" + first.events[0]["response"]["id"].get<std::string>();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Send("GET", long_path, "sk-alice").body["status"], "in_progress") << "its client's hanging up cancels nothing";
  const EventsRead follow = ReadEvents("GET", long_path + "?stream=true&starting_after=2", "sk-alice", nullptr, 5);
  ASSERT_EQ(follow.events.size(), 5u);
  for (size_t i = 0; i < follow.events.size(); ++i) EXPECT_EQ(follow.events[i]["sequence_number"], 3 + i);
  const HttpAnswer cancelled = Send("POST", long_path + "/cancel", "sk-alice");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.body["status"], "cancelled");
  const EventsRead ended = ReadEvents("GET", long_path + "?stream=true&starting_after=7", "sk-alice");
  ASSERT_FALSE(ended.events.empty());
  EXPECT_EQ(ended.events.front()["sequence_number"], 8);
  EXPECT_EQ(ended.events.back()["type"], "response.cancelled");
  EXPECT_EQ(ended.events.back()["response"], cancelled.body);

  // Refused: streaming again a response not created with background and stream; include on retrieval.
  json polled_body = body;
  polled_body.erase("stream");
  const HttpAnswer polled = Send("POST", "/v1/responses", "sk-alice", polled_body);
  ASSERT_EQ(polled.status, 200) << polled.body;
  const HttpAnswer not_streamed = Send("GET", "/v1/responses/" + polled.body["id"].get<std::string>() + "?stream=true", "sk-alice");
  EXPECT_EQ(not_streamed.status, 400) << not_streamed.body;
  EXPECT_EQ(not_streamed.body["error"]["param"], "stream") << not_streamed.body;
  const HttpAnswer include = Send("GET", path + "?include%5B%5D=message.output_text.logprobs", "sk-alice");
  EXPECT_EQ(include.status, 400) << include.body;
  EXPECT_EQ(include.body["error"]["param"], "include") << include.body;
}

// A background response is not dropped for room while it runs: with the store crowded by later answers (the oldest
// of which go), the running one is still polled, in progress, and cancelled.
TEST_F(CrowdedStore, KeepsARunningBackgroundResponse) {
  const json long_body = {{"model", "qwen3-tiny"}, {"input", "Name three colours."}, {"max_output_tokens", 4000}, {"min_tokens", 4000},
                          {"temperature", 0}, {"chat_template_kwargs", {{"enable_thinking", false}}}, {"background", true}};
  const HttpAnswer accepted = Send("POST", "/v1/responses", "sk-alice", long_body);
  ASSERT_EQ(accepted.status, 200) << accepted.body;
  const std::string id = accepted.body["id"];
  // In progress before the others come: its entry is then the least recently used, the first to go without the rule.
  for (int i = 0; i < 6000 && Send("GET", "/v1/responses/" + id, "sk-alice").body["status"] == "queued"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto metric = [&](const std::string& name) {
    const auto metrics = testing::ScrapeMetrics(*server_);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? metrics->Sum(name) : -1;
  };
  const json small = {{"model", "qwen3-tiny"}, {"input", "Say hi."}, {"max_output_tokens", 4}, {"temperature", 0},
                      {"chat_template_kwargs", {{"enable_thinking", false}}}};
  std::vector<std::string> answered;
  for (int i = 0; i < 40 && metric("arach_responses_evicted_total") < 2; ++i) {
    const HttpAnswer answer = Send("POST", "/v1/responses", "sk-alice", small);
    ASSERT_EQ(answer.status, 200) << answer.body;
    answered.push_back(answer.body["id"]);
  }
  ASSERT_GE(metric("arach_responses_evicted_total"), 2) << "the store is crowded";
  EXPECT_EQ(Send("GET", "/v1/responses/" + answered[0], "sk-alice").status, 404) << "the oldest answer went for room";
  ASSERT_EQ(metric("arach_responses_background_running"), 1) << "the long response still runs";
  const HttpAnswer polled = Send("GET", "/v1/responses/" + id, "sk-alice");
  ASSERT_EQ(polled.status, 200) << polled.body;
  EXPECT_EQ(polled.body["status"], "in_progress");
  const HttpAnswer cancelled = Send("POST", "/v1/responses/" + id + "/cancel", "sk-alice");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.body["status"], "cancelled");
}

}  // namespace
}  // namespace arach
