// Fill in the middle end to end, on qwen3-tiny (whose vocabulary has Qwen2.5-Coder's <|fim_prefix|> markers):
// /v1/completions with `suffix` prompts the model with the markers around the prompt and the suffix (its prompt
// ids are those of that text) and answers as that prompt answers; gRPC Generate's suffix alike; Chat refuses one;
// a token-id prompt with a suffix is refused naming it.
#include "client/arach_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/http_answer.h"
#include "tests/testing/qwen3_chat_server.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;

class FillInMiddleServer : public testing::SharedQwen3ChatServer<FillInMiddleServer> {
 protected:
  static HttpAnswer Post(const std::string& path, const json& body) {
    return testing::HttpSend(server_->http_address(), "POST", path, body.dump());
  }
};

TEST_F(FillInMiddleServer, TheSuffixGoesAfterTheGapOnBothApis) {
  const std::string prefix = "def add(a, b):\n    ";
  const std::string suffix = "\n\nprint(add(1, 2))\n";
  const std::string fim_text = "<|fim_prefix|>" + prefix + "<|fim_suffix|>" + suffix + "<|fim_middle|>";
  const json base = {{"model", "qwen3-tiny"}, {"max_tokens", 8}, {"temperature", 0}, {"return_token_ids", true}};
  json with_suffix = base;
  with_suffix["prompt"] = prefix;
  with_suffix["suffix"] = suffix;
  const HttpAnswer filled = Post("/v1/completions", with_suffix);
  ASSERT_EQ(filled.status, 200) << filled.body;
  const HttpAnswer tokenized = Post("/tokenize", {{"prompt", fim_text}});
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  EXPECT_EQ(filled.body["choices"][0]["prompt_token_ids"], tokenized.body["tokens"]);
  json as_text = base;
  as_text["prompt"] = fim_text;
  const HttpAnswer plain = Post("/v1/completions", as_text);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(filled.body["choices"][0]["text"], plain.body["choices"][0]["text"]) << "the same prompt, greedy";
  EXPECT_EQ(filled.body["usage"]["prompt_tokens"], tokenized.body["count"]);

  auto client = client::ArachClient::Connect(server_->grpc_address());
  arach::v1::GenerateRequest request;
  request.set_text(prefix);
  request.set_suffix(suffix);
  request.set_max_tokens(8);
  request.mutable_sampling()->set_temperature(0.0f);
  std::string text;
  grpc::Status status = client->Generate(request, [&](const arach::v1::GenerateResponse& r) { text += r.text(); });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(text, filled.body["choices"][0]["text"]);

  request.mutable_token_ids()->add_ids(1);
  status = client->Generate(request, [](const arach::v1::GenerateResponse&) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("suffix: ", 0), 0u) << status.error_message();
  arach::v1::ChatRequest chat;
  arach::v1::ChatMessage* message = chat.add_messages();
  message->set_role("user");
  message->set_content("x");
  chat.mutable_generation()->set_suffix(suffix);
  status = client->Chat(chat, [](const arach::v1::GenerateResponse&) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("generation: ", 0), 0u) << status.error_message();

  json ids = with_suffix;
  ids["prompt"] = json::array({1, 2, 3});
  const HttpAnswer refused = Post("/v1/completions", ids);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body["error"]["param"], "suffix") << refused.body;
}

}  // namespace
}  // namespace arach
