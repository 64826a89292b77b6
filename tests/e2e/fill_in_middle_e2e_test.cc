// Fill in the middle end to end, on qwen3-tiny (whose vocabulary has Qwen2.5-Coder's <|fim_prefix|> markers):
// /v1/completions with `suffix` prompts the model with the markers around the prompt and the suffix (its prompt
// ids are those of that text) and answers as that prompt answers; gRPC Generate's suffix alike; Chat refuses one;
// a token-id prompt with a suffix is refused naming it; the gap's text ends at a token that begins something else.
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
  // (<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>, <|fim_pad|>, <|repo_name|>, <|file_sep|>: where the gap's text ends)
  as_text["stop_token_ids"] = {151659, 151661, 151660, 151662, 151663, 151664};
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

  // The gap's text ends at a token that begins something else (<|file_sep|>, made certain here by its bias): the
  // stop_reason, not part of the text; a plain prompt goes on writing it (it is not a special token in Qwen's vocabulary).
  json file_sep = with_suffix;
  file_sep["logit_bias"] = {{"151664", 100}};
  const HttpAnswer ended = Post("/v1/completions", file_sep);
  ASSERT_EQ(ended.status, 200) << ended.body;
  EXPECT_EQ(ended.body["choices"][0]["finish_reason"], "stop") << ended.body;
  EXPECT_EQ(ended.body["choices"][0]["stop_reason"], 151664);
  EXPECT_EQ(ended.body["choices"][0]["text"], "");
  json plain_file_sep = base;
  plain_file_sep["prompt"] = fim_text;
  plain_file_sep["logit_bias"] = file_sep["logit_bias"];
  const HttpAnswer went_on = Post("/v1/completions", plain_file_sep);
  ASSERT_EQ(went_on.status, 200) << went_on.body;
  EXPECT_EQ(went_on.body["choices"][0]["finish_reason"], "length") << went_on.body;
  json to_the_end = file_sep;
  to_the_end["ignore_eos"] = true;
  EXPECT_EQ(Post("/v1/completions", to_the_end).body["choices"][0]["finish_reason"], "length") << "ignore_eos: on to max_tokens";
  request.clear_token_ids();
  request.set_text(prefix);
  (*request.mutable_sampling()->mutable_logit_bias())[151664] = 100;
  arach::v1::Finish finish;
  status = client->Generate(request, [&](const arach::v1::GenerateResponse& r) {
    if (r.has_finish()) finish = r.finish();
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(finish.reason(), arach::v1::FINISH_REASON_STOP) << "gRPC's suffix ends alike";
  EXPECT_EQ(finish.stop_token_id(), 151664);

  json ids = with_suffix;
  ids["prompt"] = json::array({1, 2, 3});
  const HttpAnswer refused = Post("/v1/completions", ids);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body["error"]["param"], "suffix") << refused.body;
}

}  // namespace
}  // namespace arach
