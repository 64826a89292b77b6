// vLLM's tokenizer routes on the HTTP API (POST /tokenize, /detokenize) end to end, on qwen3-tiny with the real
// Qwen3 template: a prompt's ids equal gRPC Tokenize's; a conversation's count equals the prompt_tokens that
// /v1/chat/completions reports for it, and its ids decode to the prompt chat rendered (return_prompt); ids
// decode back to their text; token strings are the vocabulary's; errors name the field.
#include <httplib.h>

#include "client/arach_client.h"
#include "client/event_stream.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/http_answer.h"
#include "tests/testing/qwen3_chat_server.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;

class TokenizeServer : public testing::SharedQwen3ChatServer<TokenizeServer> {
 protected:
  static HttpAnswer Post(const std::string& path, const json& body) {
    return testing::HttpSend(server_->http_address(), "POST", path, body.dump());
  }
};

TEST_F(TokenizeServer, APromptsIdsAreGrpcTokenizesAndDecodeBack) {
  const std::string text = "Hello world, <|im_end|> and caf\xc3\xa9.";
  auto client = client::ArachClient::Connect(server_->grpc_address());
  for (const bool special : {true, false}) {
    const HttpAnswer answer = Post("/tokenize", {{"model", "qwen3-tiny"}, {"prompt", text}, {"add_special_tokens", special}});
    ASSERT_EQ(answer.status, 200) << answer.body;
    arach::v1::TokenizeRequest request;
    request.add_texts(text);
    request.set_add_bos(special);
    arach::v1::TokenizeResponse grpc_ids;
    grpc::ClientContext context;
    ASSERT_TRUE(client->inference().Tokenize(&context, request, &grpc_ids).ok());
    const std::vector<int32_t> ids = answer.body["tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids, std::vector<int32_t>(grpc_ids.tokens(0).ids().begin(), grpc_ids.tokens(0).ids().end()));
    EXPECT_EQ(answer.body["count"], ids.size());
    EXPECT_EQ(answer.body["max_model_len"], 40960);
    const HttpAnswer text_back = Post("/detokenize", {{"tokens", ids}});
    ASSERT_EQ(text_back.status, 200) << text_back.body;
    EXPECT_EQ(text_back.body["prompt"], text) << "special tokens written in the text decode back";
  }
}

// return_token_strs (vLLM's): each token as the vocabulary writes it (byte-level BPE: a leading space is "Ġ"),
// for a prompt and for a conversation; absent unless asked.
TEST_F(TokenizeServer, TokenStringsAreTheVocabularysOwn) {
  const HttpAnswer answer = Post("/tokenize", {{"prompt", "Hello world<|im_end|>"}, {"return_token_strs", true}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.body["token_strs"], json::array({"Hello", "\u0120world", "<|im_end|>"})) << answer.body;
  EXPECT_EQ(answer.body["tokens"].size(), 3u);
  const HttpAnswer plain = Post("/tokenize", {{"prompt", "Hello world"}, {"return_token_strs", false}});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_FALSE(plain.body.contains("token_strs"));
  const HttpAnswer chat = Post("/tokenize", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"return_token_strs", true}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  ASSERT_EQ(chat.body["token_strs"].size(), chat.body["tokens"].size());
  EXPECT_EQ(chat.body["token_strs"][0], "<|im_start|>");
}

TEST_F(TokenizeServer, AConversationCountsWhatChatCompletionsRenders) {
  const json messages = json::parse(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}])");
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])");
  for (const bool thinking : {true, false}) {
    const json kwargs = {{"enable_thinking", thinking}};
    const HttpAnswer tokenized = Post("/tokenize", {{"messages", messages}, {"tools", tools}, {"chat_template_kwargs", kwargs}});
    ASSERT_EQ(tokenized.status, 200) << tokenized.body;
    const HttpAnswer chat = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", messages}, {"tools", tools}, {"max_tokens", 1},
                                                          {"chat_template_kwargs", kwargs}, {"return_prompt", true}});
    ASSERT_EQ(chat.status, 200) << chat.body;
    EXPECT_EQ(tokenized.body["count"], chat.body["usage"]["prompt_tokens"]);
    const HttpAnswer rendered = Post("/detokenize", {{"tokens", tokenized.body["tokens"]}});
    ASSERT_EQ(rendered.status, 200) << rendered.body;
    EXPECT_EQ(rendered.body["prompt"], chat.body["arach_prompt"]);
  }
  // A final assistant message left open (continue_final_message) counts as chat counts it.
  json prefill = messages;
  prefill.push_back({{"role", "assistant"}, {"content", "It is"}});
  const HttpAnswer open_turn = Post("/tokenize", {{"messages", prefill}, {"continue_final_message", true}});
  const HttpAnswer open_chat = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", prefill}, {"max_tokens", 1},
                                                             {"continue_final_message", true}});
  ASSERT_EQ(open_turn.status, 200) << open_turn.body;
  ASSERT_EQ(open_chat.status, 200) << open_chat.body;
  EXPECT_EQ(open_turn.body["count"], open_chat.body["usage"]["prompt_tokens"]);
  const HttpAnswer without_prompt = Post("/tokenize", {{"messages", messages}, {"add_generation_prompt", false}});
  const HttpAnswer with_prompt = Post("/tokenize", {{"messages", messages}});
  ASSERT_EQ(without_prompt.status, 200) << without_prompt.body;
  EXPECT_LT(without_prompt.body["count"], with_prompt.body["count"]) << "add_generation_prompt false leaves the assistant's header out";
}

// Chat's prompt_logprobs (vLLM's, beside the choices): one entry per token of the rendered conversation, keyed by the
// ids /tokenize gives for it.
TEST_F(TokenizeServer, ChatPromptLogprobsCoverTheRenderedConversation) {
  const json messages = json::parse(R"([{"role": "user", "content": "Weather in Paris?"}])");
  const HttpAnswer chat = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 1},
                                                        {"n", 2}, {"prompt_logprobs", 0}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  const HttpAnswer tokenized = Post("/tokenize", {{"messages", messages}});
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const std::vector<int32_t> ids = tokenized.body["tokens"];
  const json& prompt_logprobs = chat.body["prompt_logprobs"];
  ASSERT_EQ(prompt_logprobs.size(), ids.size()) << chat.body;
  EXPECT_TRUE(prompt_logprobs[0].is_null());
  for (size_t t = 1; t < ids.size(); ++t) {
    ASSERT_EQ(prompt_logprobs[t].size(), 1u) << "prompt_logprobs 0: the token alone";
    const json& entry = prompt_logprobs[t][std::to_string(ids[t])];
    EXPECT_LE(entry["logprob"].get<float>(), 0.0f);
    EXPECT_GE(entry["rank"].get<int>(), 1);
  }
  EXPECT_FALSE(chat.body["choices"][0].contains("prompt_logprobs"));

  // truncate_prompt_tokens keeps the rendered conversation's last tokens (and their log-probs).
  const HttpAnswer truncated = Post("/v1/chat/completions", {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 1},
                                                             {"prompt_logprobs", 0}, {"truncate_prompt_tokens", 6}});
  ASSERT_EQ(truncated.status, 200) << truncated.body;
  EXPECT_EQ(truncated.body["usage"]["prompt_tokens"], 6);
  ASSERT_EQ(truncated.body["prompt_logprobs"].size(), 6u);
  EXPECT_TRUE(truncated.body["prompt_logprobs"][1].contains(std::to_string(ids[ids.size() - 5])));
}

// Chat's log-probs with return_tokens_as_token_ids: each entry (and alternative) is "token_id:<id>" with that
// name's bytes, and the ids decode to the tokens' joined texts of the same greedy turn without it.
TEST_F(TokenizeServer, ChatLogprobTokensNamedByTheirIds) {
  const json body = {{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 12},
                     {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2}};
  json named_body = body;
  named_body["return_tokens_as_token_ids"] = true;
  const HttpAnswer plain = Post("/v1/chat/completions", body);
  const HttpAnswer named = Post("/v1/chat/completions", named_body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(named.status, 200) << named.body;
  const json& plain_entries = plain.body["choices"][0]["logprobs"]["content"];
  const json& named_entries = named.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(named_entries.size(), plain_entries.size());
  std::vector<int32_t> ids;
  std::string plain_text;
  for (size_t t = 0; t < named_entries.size(); ++t) {
    const std::string name = named_entries[t]["token"];
    ASSERT_EQ(name.rfind("token_id:", 0), 0u) << name;
    ids.push_back(std::stoi(name.substr(9)));
    EXPECT_EQ(named_entries[t]["bytes"], json(std::vector<int>(name.begin(), name.end())));
    EXPECT_EQ(named_entries[t]["logprob"], plain_entries[t]["logprob"]);
    ASSERT_EQ(named_entries[t]["top_logprobs"].size(), 2u);
    EXPECT_EQ(named_entries[t]["top_logprobs"][0]["token"].get<std::string>().rfind("token_id:", 0), 0u);
    plain_text += plain_entries[t]["token"].get<std::string>();
  }
  const HttpAnswer decoded = Post("/detokenize", {{"tokens", ids}});
  ASSERT_EQ(decoded.status, 200) << decoded.body;
  EXPECT_EQ(decoded.body["prompt"], plain_text);
}

// Chat's return_token_ids: the prompt's ids (/tokenize's for the conversation) beside the choices, each choice's
// generated ids; streamed, the prompt's in the first chunk and each chunk's new ids, joining to the whole answer's.
TEST_F(TokenizeServer, ChatReturnTokenIdsListsThePromptAndGeneratedIds) {
  const json messages = json::parse(R"([{"role": "user", "content": "Count to three."}])");
  const json body = {{"model", "qwen3-tiny"}, {"messages", messages}, {"max_tokens", 12}, {"temperature", 0}, {"return_token_ids", true}};
  const HttpAnswer whole = Post("/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const HttpAnswer tokenized = Post("/tokenize", {{"messages", messages}});
  ASSERT_EQ(tokenized.status, 200);
  EXPECT_EQ(whole.body["prompt_token_ids"], tokenized.body["tokens"]);
  EXPECT_FALSE(whole.body["choices"][0].contains("prompt_token_ids"));
  const json& ids = whole.body["choices"][0]["token_ids"];
  EXPECT_EQ(ids.size(), whole.body["usage"]["completion_tokens"].get<size_t>());

  json streamed = body;
  streamed["stream"] = true;
  std::vector<json> chunks;
  const client::EventStreamAnswer answer = client::PostForEvents(server_->http_address(), "/v1/chat/completions", streamed.dump(),
                                                                 [&](const std::string& payload) {
                                                                   if (payload != "[DONE]") chunks.push_back(json::parse(payload));
                                                                   return true;
                                                                 });
  ASSERT_EQ(answer.status, 200);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks[0]["prompt_token_ids"], tokenized.body["tokens"]) << "the first chunk carries the prompt's ids";
  json joined = json::array();
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i > 0) {
      EXPECT_FALSE(chunks[i].contains("prompt_token_ids"));
    }
    for (const json& id : chunks[i]["choices"][0]["token_ids"]) joined.push_back(id);
  }
  EXPECT_EQ(joined, ids);
}

TEST_F(TokenizeServer, ErrorsNameTheField) {
  const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
      {"/tokenize", {{"prompt", 3}}, 400, "prompt"},
      {"/tokenize", {{"prompt", "x"}, {"add_special_tokens", "yes"}}, 400, "add_special_tokens"},
      {"/tokenize", {{"prompt", "x"}, {"return_token_strs", "yes"}}, 400, "return_token_strs"},
      {"/tokenize", {{"prompt", "x"}, {"n", 2}}, 400, "n"},
      {"/tokenize", {{"messages", json::array()}}, 400, "messages"},
      {"/tokenize", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"add_special_tokens", true}}, 400, "add_special_tokens"},
      {"/tokenize", {{"model", "gpt-5"}, {"prompt", "x"}}, 404, "model"},
      {"/detokenize", {{"tokens", {1, -2}}}, 400, "tokens[1]"},
      {"/detokenize", {{"tokens", {1, 999999999}}}, 400, "tokens[1]"},
      {"/detokenize", {{"tokens", "1 2"}}, 400, "tokens"},
      {"/detokenize", {{"prompt", "x"}}, 400, "prompt"},
  };
  for (const auto& [path, body, status, param] : cases) {
    const HttpAnswer answer = Post(path, body);
    EXPECT_EQ(answer.status, status) << path << " " << body;
    EXPECT_EQ(answer.body["error"]["param"], param) << path << " " << body << " -> " << answer.body;
  }
}

}  // namespace
}  // namespace arach
