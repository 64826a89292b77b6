// End-to-end over HTTP: the real arach-server process driven with a plain HTTP client (cpp-httplib).
//  - Fixture server (gpt2-tiny with its adapter): /v1/models lists every variant; a greedy completion
//    equals the gRPC Generate text of the same variant, streamed or not; echo scoring equals gRPC Score;
//    every error has its status and names its parameter; the request id is echoed and logged; /metrics on
//    the HTTP port parses and counts HTTP requests by variant.
// (The slow model's HTTP tests: http_slow_server_test.cc.)
#include <httplib.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "client/arach_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/http_completion.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/shared_fixture_server.h"

namespace arach {
namespace {

using client::ArachClient;
using json = nlohmann::json;
using testing::EventuallyMetrics;
using testing::ServerProcess;

testing::PrometheusText Metrics(const ServerProcess& server) { return testing::MetricsOrFail(server); }

using testing::HttpAnswer;

using testing::Complete;
using testing::Send;
using testing::Stream;
using testing::StreamResult;

// ------------------------------------------------------------------------------ fixture server

class HttpFixtureServer : public testing::SharedFixtureServer<HttpFixtureServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--max_prompt_bytes=4000", "--max_request_bytes=65536"}; }

 protected:
  static json PromptIds() {
    json ids = json::array();
    for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) ids.push_back(id);
    return ids;
  }
  // The gRPC Generate text of the reference prompt under `variant`.
  std::string GrpcText(bool arach, bool skip, int max_tokens) {
    arach::v1::GenerateRequest request;
    for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) request.mutable_token_ids()->add_ids(id);
    request.set_max_tokens(max_tokens);
    request.set_ignore_eos(true);
    request.mutable_sampling()->set_temperature(0.0f);
    request.mutable_variant()->set_arach(arach);
    request.mutable_variant()->set_skip(skip);
    std::string text;
    const grpc::Status status = client_->Generate(request, [&](const arach::v1::GenerateResponse& r) { text += r.text(); });
    EXPECT_TRUE(status.ok()) << status.error_message();
    return text;
  }
};

TEST_F(HttpFixtureServer, ModelsListEveryVariantUnderTheServedName) {
  const HttpAnswer models = Send(*server_, "GET", "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  std::vector<std::string> ids;
  for (const json& m : models.body["data"]) ids.push_back(m["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"gpt2-tiny", "gpt2-tiny:base", "gpt2-tiny:arach", "gpt2-tiny:skip",
                                           "gpt2-tiny:arach+skip"}));
  // GET /v1/models/{id} (the OpenAI client's models.retrieve): each listed id as its own object, 404 for another.
  for (const json& listed : models.body["data"]) {
    const HttpAnswer one = Send(*server_, "GET", "/v1/models/" + listed["id"].get<std::string>());
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(one.body, listed);
  }
  const HttpAnswer missing = Send(*server_, "GET", "/v1/models/gpt2-tiny:nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["error"]["param"], "model");
  EXPECT_EQ(missing.body["error"]["code"], "model_not_found");
  arach::v1::ModelInfo info;
  ASSERT_TRUE(client_->GetModelInfo(&info).ok());
  EXPECT_EQ(info.model(), "gpt2-tiny") << "GetModelInfo reports the served name, not the folder";
  // --kv_cache_dtype auto: f16 beside the half-width weights of a build and CPU with F16C, else float32; K and V of every layer.
  ASSERT_TRUE(info.kv_cache_dtype() == "F16" || info.kv_cache_dtype() == "F32") << info.kv_cache_dtype();
  EXPECT_EQ(info.kv_cache_bytes_per_token(), 2u * info.num_layers() * info.hidden_size() * (info.kv_cache_dtype() == "F32" ? 4 : 2));
  EXPECT_EQ(info.weight_quantization(), "") << "not an FP8 checkpoint";
  EXPECT_EQ(Send(*server_, "GET", "/health").status, 200);
  EXPECT_EQ(Send(*server_, "GET", "/ready").status, 200);
}

TEST_F(HttpFixtureServer, ANonStreamedAnswerTooLargeForTheResponseLimitIsRefusedBeforeAnyWork) {
  // 16 choices x 4096 tokens x (own + chosen + 20 alternatives) = 1.44 M log-probs, 22 MiB at least, over 16 MiB.
  const json body = {{"model", "gpt2-tiny"}, {"prompt", "a"}, {"n", 16}, {"max_tokens", 4096}, {"logprobs", 20}};
  const HttpAnswer refused = Complete(*server_, body);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body["error"]["param"], "logprobs");
  EXPECT_NE(refused.body["error"]["message"].get<std::string>().find("--max_response_bytes"), std::string::npos) << refused.body;
  // Streamed, it is sent a chunk at a time: served (hung up after the first event).
  json streamed = body;
  streamed["stream"] = true;
  const StreamResult stream = Stream(*server_, streamed, [](const std::string&) { return false; });
  EXPECT_EQ(stream.status, 200);
}

TEST_F(HttpFixtureServer, ListensWithARoomyConnectionBacklog) {
  // cpp-httplib's own backlog is 5: a burst of clients connecting at once overflowed it (resets, or the kernel's
  // 1 s SYN retry). `ss` reports a listening socket's backlog as its Send-Q.
  const std::string port = server_->http_address().substr(server_->http_address().rfind(':') + 1);
  FILE* ss = popen(("ss -ltnH 'sport = :" + port + "' 2>/dev/null").c_str(), "r");
  ASSERT_NE(ss, nullptr);
  char line[512] = {0};
  const bool read = fgets(line, sizeof(line), ss) != nullptr;
  const int exit_status = pclose(ss);
  if (!read || exit_status != 0) GTEST_SKIP() << "ss (iproute2) is not installed or cannot read sockets here";
  std::istringstream fields(line);
  std::string state;
  long receive_queue = -1, backlog = -1;
  fields >> state >> receive_queue >> backlog;
  EXPECT_EQ(state, "LISTEN") << line;
  EXPECT_GE(backlog, 128) << line;
}

TEST_F(HttpFixtureServer, GreedyCompletionEqualsGrpcForEveryVariant) {
  for (const std::string variant : {"base", "arach", "skip", "arach+skip"}) {
    const bool arach = variant.find("arach") != std::string::npos, skip = variant.find("skip") != std::string::npos;
    const json body = {{"model", "gpt2-tiny:" + variant}, {"prompt", PromptIds()}, {"max_tokens", 24},
                       {"temperature", 0},                {"ignore_eos", true}};
    const HttpAnswer answer = Complete(*server_, body);
    ASSERT_EQ(answer.status, 200) << answer.body;
    const std::string grpc_text = GrpcText(arach, skip, 24);
    EXPECT_EQ(answer.body["choices"][0]["text"], grpc_text) << variant;
    EXPECT_EQ(answer.body["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(answer.body["usage"]["completion_tokens"], 24);
    EXPECT_EQ(answer.body["usage"]["prompt_tokens"], PromptIds().size());
    EXPECT_EQ(answer.body["arach_variant"], variant);
    EXPECT_EQ(answer.header("x-arach-variant"), variant);
    EXPECT_EQ(answer.body["object"], "text_completion");

    json streamed = body;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    const StreamResult stream = Stream(*server_, streamed);
    ASSERT_EQ(stream.status, 200);
    ASSERT_GE(stream.events.size(), 3u);
    EXPECT_EQ(stream.events.back(), "[DONE]");
    std::string text;
    std::string finish;
    for (size_t i = 0; i + 2 < stream.events.size(); ++i) {
      const json chunk = json::parse(stream.events[i]);
      text += chunk["choices"][0]["text"].get<std::string>();
      if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, grpc_text) << variant;
    EXPECT_EQ(finish, "length");
    EXPECT_GT(stream.events.size(), 5u) << "tokens are streamed as they come";
    const json usage = json::parse(stream.events[stream.events.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
  }
}

// Text held back while it may still become a stop string is not streamed as empty chunks: every chunk carries text
// or the finish. The stop string here is two tokens of the greedy text and then "~~~", so both
// are held back and then released (it never matches).
TEST_F(HttpFixtureServer, StreamedChunksWhileAStopStringIsHeldBackAreNotEmpty) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 16}, {"temperature", 0},
                     {"ignore_eos", true},   {"stream", true}};
  auto texts = [&](const json& request) {
    const StreamResult stream = Stream(*server_, request);
    EXPECT_EQ(stream.status, 200);
    std::vector<std::string> out;
    for (const std::string& event : stream.events) {
      if (event == "[DONE]") continue;
      const json chunk = json::parse(event);
      const json& choice = chunk["choices"][0];
      out.push_back(choice["text"]);
      EXPECT_TRUE(!out.back().empty() || !choice["finish_reason"].is_null()) << "an empty chunk: " << event;
    }
    return out;
  };
  const std::vector<std::string> plain = texts(body);
  size_t held = 1;
  while (held + 2 < plain.size() && (plain[held].empty() || plain[held + 1].empty())) ++held;
  ASSERT_LT(held + 2, plain.size()) << "two consecutive tokens with text";
  json with_stop = body;
  with_stop["stop"] = {plain[held] + plain[held + 1] + "~~~"};
  const std::vector<std::string> stopped = texts(with_stop);
  EXPECT_EQ(absl::StrJoin(stopped, ""), absl::StrJoin(plain, "")) << "the stop string never matches";
  EXPECT_LT(stopped.size(), plain.size()) << "the two held-back tokens come out in one chunk";
}

// stop_reason (vLLM's) says what ended a choice: the stop string, a stop token id the request listed, else null;
// include_stop_str_in_output keeps the stop string in the text, whole and streamed. Greedy after p48 gives
// ":\nI'll not, ..." (the fixture's reference), so ":" (id 25) is the first token and "not" comes within 12 tokens.
TEST_F(HttpFixtureServer, StopReasonSaysWhatEndedTheText) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpAnswer plain = Complete(*server_, body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  const json& plain_choice = plain.body["choices"][0];
  EXPECT_EQ(plain_choice["finish_reason"], "length");
  ASSERT_TRUE(plain_choice.contains("stop_reason"));
  EXPECT_TRUE(plain_choice["stop_reason"].is_null());
  const std::string text = plain_choice["text"];
  const size_t at = text.find("not");
  ASSERT_NE(at, std::string::npos) << text;

  json with_stop = body;
  with_stop["stop"] = {"not", "never"};
  const HttpAnswer cut = Complete(*server_, with_stop);
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.body["choices"][0]["text"], text.substr(0, at));
  EXPECT_EQ(cut.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut.body["choices"][0]["stop_reason"], "not");

  json kept = with_stop;
  kept["include_stop_str_in_output"] = true;
  const HttpAnswer whole = Complete(*server_, kept);
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.body["choices"][0]["text"], text.substr(0, at + 3));
  EXPECT_EQ(whole.body["choices"][0]["stop_reason"], "not");
  EXPECT_EQ(whole.body["usage"]["completion_tokens"], cut.body["usage"]["completion_tokens"]);

  kept["stream"] = true;
  const StreamResult stream = Stream(*server_, kept);
  ASSERT_EQ(stream.status, 200);
  std::string streamed;
  json last_choice;
  for (const std::string& event : stream.events) {
    if (event == "[DONE]") continue;
    const json choice = json::parse(event)["choices"][0];
    streamed += choice["text"].get<std::string>();
    if (choice["finish_reason"].is_null()) {
      EXPECT_FALSE(choice.contains("stop_reason")) << "only the last chunk says why it stopped";
    }
    last_choice = choice;
  }
  EXPECT_EQ(streamed, text.substr(0, at + 3));
  EXPECT_EQ(last_choice["finish_reason"], "stop");
  EXPECT_EQ(last_choice["stop_reason"], "not");

  json token_stop = body;
  token_stop["stop_token_ids"] = {25};
  const HttpAnswer by_token = Complete(*server_, token_stop);
  ASSERT_EQ(by_token.status, 200) << by_token.body;
  EXPECT_EQ(by_token.body["choices"][0]["text"], "");
  EXPECT_EQ(by_token.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(by_token.body["choices"][0]["stop_reason"], 25);

  json not_a_bool = body;
  not_a_bool["include_stop_str_in_output"] = "yes";
  const HttpAnswer refused = Complete(*server_, not_a_bool);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body["error"]["param"], "include_stop_str_in_output") << refused.body;
}

// vLLM's prompt_logprobs: null, then each prompt token's log-prob (echo's, which equal gRPC Score's below) with its
// rank in the vocabulary and the asked alternatives, keyed by id; echo beside it keeps its own number of
// alternatives; not with stream.
TEST_F(HttpFixtureServer, PromptLogprobsAreEchosWithRanksAndAlternatives) {
  const json ids = PromptIds();
  const json body = {{"model", "gpt2-tiny"}, {"prompt", ids}, {"max_tokens", 2}, {"temperature", 0}, {"prompt_logprobs", 3}};
  const HttpAnswer answer = Complete(*server_, body);
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json& prompt_logprobs = answer.body["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(prompt_logprobs.size(), ids.size());
  EXPECT_TRUE(prompt_logprobs[0].is_null());
  const HttpAnswer echo = Complete(*server_, {{"model", "gpt2-tiny"}, {"prompt", ids}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 3}});
  ASSERT_EQ(echo.status, 200) << echo.body;
  const json& echo_logprobs = echo.body["choices"][0]["logprobs"];
  int ranked_first = 0;
  for (size_t t = 1; t < ids.size(); ++t) {
    const json& entry = prompt_logprobs[t];
    const std::string key = std::to_string(ids[t].get<int32_t>());
    ASSERT_TRUE(entry.contains(key)) << t << ": " << entry;
    const float logprob = entry[key]["logprob"];
    const int rank = entry[key]["rank"];
    EXPECT_NEAR(logprob, echo_logprobs["token_logprobs"][t].get<float>(), 1e-5) << t;
    EXPECT_EQ(entry[key]["decoded_token"], echo_logprobs["tokens"][t]) << t;
    EXPECT_EQ(entry.size(), rank <= 3 ? 3u : 4u) << t << ": the token, and three alternatives it may be one of";
    float best = -1e30f;
    for (const auto& [alternative, value] : echo_logprobs["top_logprobs"][t].items()) best = std::max(best, value.get<float>());
    for (const auto& [id, value] : entry.items()) {
      if (id == key) continue;
      EXPECT_GE(value["rank"].get<int>(), 1);
      EXPECT_LE(value["rank"].get<int>(), 3);
      if (value["rank"] == 1) {
        EXPECT_NEAR(value["logprob"].get<float>(), best, 1e-5) << t;
      }
      EXPECT_EQ(value["rank"].get<int>() < rank, value["logprob"].get<float>() > logprob) << t << ": ranks follow the log-probs";
    }
    ranked_first += rank == 1 ? 1 : 0;
  }
  EXPECT_GT(ranked_first, 0) << "some prompt tokens are the model's first choice";
  EXPECT_LT(ranked_first, static_cast<int>(ids.size()) - 1) << "and some are not";

  json with_echo = body;
  with_echo["echo"] = true;
  with_echo["logprobs"] = 1;
  const HttpAnswer both = Complete(*server_, with_echo);
  ASSERT_EQ(both.status, 200) << both.body;
  EXPECT_EQ(both.body["choices"][0]["prompt_logprobs"], prompt_logprobs);
  for (size_t t = 1; t < ids.size(); ++t) {
    EXPECT_LE(both.body["choices"][0]["logprobs"]["top_logprobs"][t].size(), 2u) << "echo's one alternative and the token";
  }
  EXPECT_FALSE(echo.body["choices"][0].contains("prompt_logprobs")) << "only when asked";

  json streamed = body;
  streamed["stream"] = true;
  EXPECT_EQ(Complete(*server_, streamed).body["error"]["param"], "prompt_logprobs");
  json too_many = body;
  too_many["prompt_logprobs"] = 21;
  EXPECT_EQ(Complete(*server_, too_many).body["error"]["param"], "prompt_logprobs");
}

// A prompt with n choices is scored once: its first choice scores it (prompt_logprobs, echo's log-probs) and the
// others, which wait for its blocks, reuse them from the prefix cache and share its scores, a single choice's.
TEST_F(HttpFixtureServer, PromptOfManyChoicesIsScoredOnce) {
  const json ids = PromptIds();
  json body = {{"model", "gpt2-tiny"}, {"prompt", ids}, {"max_tokens", 2}, {"temperature", 0}, {"n", 3}, {"echo", true},
               {"logprobs", 2}, {"prompt_logprobs", 1}, {"cache_salt", "prompt-of-many-choices"}};  // blocks of its own
  const testing::PrometheusText before = Metrics(*server_);
  const HttpAnswer many = Complete(*server_, body);
  ASSERT_EQ(many.status, 200) << many.body;
  const testing::PrometheusText after = Metrics(*server_);
  ASSERT_EQ(after.Sum("arach_cache_config_info", {{"block_size", "16"}}), 1) << "the server's default --block_size";
  const double reusable = static_cast<double>((ids.size() - 1) / 16 * 16);  // full blocks before the last token
  EXPECT_EQ(after.Value("arach_prefix_cache_hit_tokens_total") - before.Value("arach_prefix_cache_hit_tokens_total"), 2 * reusable)
      << "the second and third choices computed only what follows the first one's blocks";

  body["n"] = 1;
  body["cache_salt"] = "prompt-of-one-choice";
  const HttpAnswer one = Complete(*server_, body);
  ASSERT_EQ(one.status, 200) << one.body;
  const json& expected = one.body["choices"][0];
  ASSERT_EQ(many.body["choices"].size(), 3u);
  for (const json& choice : many.body["choices"]) {
    ASSERT_EQ(choice["prompt_logprobs"].size(), ids.size()) << choice;
    ASSERT_EQ(choice["logprobs"]["token_logprobs"].size(), ids.size() + 2) << "the echoed prompt's, then the two generated";
    EXPECT_TRUE(choice["prompt_logprobs"][0].is_null());
    for (size_t t = 1; t < ids.size(); ++t) {
      const std::string key = std::to_string(ids[t].get<int32_t>());
      EXPECT_NEAR(choice["prompt_logprobs"][t][key]["logprob"].get<float>(), expected["prompt_logprobs"][t][key]["logprob"].get<float>(),
                  1e-5)
          << t;
      EXPECT_NEAR(choice["logprobs"]["token_logprobs"][t].get<float>(), expected["logprobs"]["token_logprobs"][t].get<float>(), 1e-5) << t;
      EXPECT_EQ(choice["logprobs"]["top_logprobs"][t].size(), expected["logprobs"]["top_logprobs"][t].size()) << t;
    }
    EXPECT_EQ(choice["text"], expected["text"]) << "the echoed prompt and the same greedy tokens";
  }
  EXPECT_EQ(many.body["usage"]["prompt_tokens"], ids.size()) << "the prompt counts once";
}

// echo with logprobs, streamed: each choice's first chunk carries the echoed prompt and its log-probs (the first null),
// then its first token's; gathered over the stream, each choice's text and log-prob entries equal the whole answer's.
// With n 2 each streamed choice scores its own prompt (its lead's scores may come after its own first chunk).
TEST_F(HttpFixtureServer, EchoWithLogprobsIsStreamedPromptFirst) {
  const json ids = PromptIds();
  const json body = {{"model", "gpt2-tiny"}, {"prompt", ids}, {"max_tokens", 4}, {"temperature", 0}, {"n", 2}, {"echo", true},
                     {"logprobs", 2}};
  const HttpAnswer whole = Complete(*server_, body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  ASSERT_EQ(whole.body["choices"].size(), 2u);
  json streamed = body;
  streamed["stream"] = true;
  const StreamResult stream = Stream(*server_, streamed);
  ASSERT_EQ(stream.status, 200);
  ASSERT_FALSE(stream.events.empty());
  EXPECT_EQ(stream.events.back(), "[DONE]");
  const std::vector<std::string> keys = {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
  std::vector<json> gathered(2, json{{"text", ""}});
  std::vector<size_t> first_chunk_entries(2, 0);
  for (size_t i = 0; i + 1 < stream.events.size(); ++i) {
    const json chunk = json::parse(stream.events[i]);
    for (const json& choice : chunk["choices"]) {
      const size_t c = choice["index"].get<size_t>();
      ASSERT_LT(c, 2u);
      gathered[c]["text"] = gathered[c]["text"].get<std::string>() + choice["text"].get<std::string>();
      if (choice["logprobs"].is_null()) continue;
      if (first_chunk_entries[c] == 0) first_chunk_entries[c] = choice["logprobs"]["tokens"].size();
      for (const std::string& key : keys) {
        for (const json& entry : choice["logprobs"][key]) gathered[c][key].push_back(entry);
      }
    }
  }
  for (size_t c = 0; c < 2; ++c) {
    const json& expected = whole.body["choices"][c];
    EXPECT_EQ(first_chunk_entries[c], ids.size() + 1) << "the first chunk: the prompt's entries, then its first token's";
    EXPECT_EQ(gathered[c]["text"], expected["text"]) << "the echoed prompt, then the same greedy tokens";
    ASSERT_EQ(gathered[c]["token_logprobs"].size(), ids.size() + 4) << gathered[c];
    EXPECT_TRUE(gathered[c]["token_logprobs"][0].is_null());
    EXPECT_TRUE(gathered[c]["top_logprobs"][0].is_null());
    EXPECT_EQ(gathered[c]["tokens"], expected["logprobs"]["tokens"]);
    EXPECT_EQ(gathered[c]["text_offset"], expected["logprobs"]["text_offset"]);
    for (size_t t = 1; t < ids.size() + 4; ++t) {
      EXPECT_NEAR(gathered[c]["token_logprobs"][t].get<float>(), expected["logprobs"]["token_logprobs"][t].get<float>(), 1e-5) << t;
      EXPECT_EQ(gathered[c]["top_logprobs"][t].size(), expected["logprobs"]["top_logprobs"][t].size()) << t;
    }
  }
}

// A prompt only scored (max_tokens 0 with echo) for n choices is scored once, by one engine request: its choices are
// the same answer n times; each prompt of a list is scored on its own.
TEST_F(HttpFixtureServer, AScoredPromptOfManyChoicesIsOneEngineRequest) {
  const json ids = PromptIds();
  const json other = json::array({ids[0], ids[1], ids[2], ids[3]});
  const json body = {{"model", "gpt2-tiny"}, {"prompt", json::array({ids, other})}, {"max_tokens", 0}, {"echo", true},
                     {"logprobs", 1}, {"n", 3}};
  const testing::PrometheusText before = Metrics(*server_);
  const HttpAnswer answer = Complete(*server_, body);
  ASSERT_EQ(answer.status, 200) << answer.body;
  const testing::PrometheusText after = Metrics(*server_);
  EXPECT_EQ(after.Sum("arach_score_requests_total") - before.Sum("arach_score_requests_total"), 2) << "one per prompt, not per choice";
  const json& choices = answer.body["choices"];
  ASSERT_EQ(choices.size(), 6u);
  for (int c = 0; c < 6; ++c) {
    const json& lead = choices[c - c % 3];
    EXPECT_EQ(choices[c]["index"], c);
    EXPECT_EQ(choices[c]["finish_reason"], "length") << c;
    EXPECT_EQ(choices[c]["text"], lead["text"]) << c;
    EXPECT_EQ(choices[c]["logprobs"], lead["logprobs"]) << c;
  }
  EXPECT_EQ(choices[0]["logprobs"]["token_logprobs"].size(), ids.size());
  EXPECT_EQ(choices[3]["logprobs"]["token_logprobs"].size(), 4u);
  EXPECT_EQ(answer.body["usage"]["prompt_tokens"], ids.size() + 4) << "each prompt once";
  EXPECT_EQ(answer.body["usage"]["completion_tokens"], 0);

  // A prompt the engine refuses refuses the call at once, the copies of its first choice with it.
  const json one_token = json::array({ids[0]});
  for (const json& prompt : {one_token, json::array({ids, one_token})}) {
    const HttpAnswer refused = Complete(*server_, {{"model", "gpt2-tiny"}, {"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"n", 3}});
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], prompt.size() == 1 ? "prompt" : "prompt[1]") << refused.body;
  }
}

// return_tokens_as_token_ids (vLLM's): log-prob entries name their tokens "token_id:<id>"; the ids decode to the
// text, and offsets and alternatives are as without it.
TEST_F(HttpFixtureServer, LogprobTokensNamedByTheirIds) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
                     {"logprobs", 2}};
  const HttpAnswer plain = Complete(*server_, body);
  json named_body = body;
  named_body["return_tokens_as_token_ids"] = true;
  const HttpAnswer named = Complete(*server_, named_body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(named.status, 200) << named.body;
  const json& plain_logprobs = plain.body["choices"][0]["logprobs"];
  const json& named_logprobs = named.body["choices"][0]["logprobs"];
  EXPECT_EQ(named.body["choices"][0]["text"], plain.body["choices"][0]["text"]);
  EXPECT_EQ(named_logprobs["text_offset"], plain_logprobs["text_offset"]);
  EXPECT_EQ(named_logprobs["token_logprobs"], plain_logprobs["token_logprobs"]);
  json ids = json::array();
  for (size_t t = 0; t < named_logprobs["tokens"].size(); ++t) {
    const std::string name = named_logprobs["tokens"][t];
    ASSERT_TRUE(absl::StartsWith(name, "token_id:")) << name;
    ids.push_back(std::stoi(name.substr(9)));
    EXPECT_EQ(named_logprobs["top_logprobs"][t].size(), plain_logprobs["top_logprobs"][t].size());
    for (const auto& [key, value] : named_logprobs["top_logprobs"][t].items()) EXPECT_TRUE(absl::StartsWith(key, "token_id:")) << key;
    EXPECT_EQ(named_logprobs["top_logprobs"][t][name], plain_logprobs["token_logprobs"][t]) << "the chosen token among them";
  }
  const HttpAnswer decoded = Send(*server_, "POST", "/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_EQ(decoded.status, 200) << decoded.body;
  EXPECT_EQ(decoded.body["prompt"], plain.body["choices"][0]["text"]);
}

// truncate_prompt_tokens (vLLM's) keeps each prompt's last k tokens: the answer is that of the shorter prompt, and
// echo gives its text.
TEST_F(HttpFixtureServer, TruncatePromptTokensKeepsTheLastOnes) {
  const json ids = PromptIds();
  ASSERT_GT(ids.size(), 12u);
  const json last(ids.end() - 12, ids.end());
  const json body = {{"model", "gpt2-tiny"}, {"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
                     {"truncate_prompt_tokens", 12}, {"echo", true}};
  const HttpAnswer truncated = Complete(*server_, body);
  json short_body = body;
  short_body["prompt"] = last;
  short_body.erase("truncate_prompt_tokens");
  const HttpAnswer shorter = Complete(*server_, short_body);
  ASSERT_EQ(truncated.status, 200) << truncated.body;
  ASSERT_EQ(shorter.status, 200) << shorter.body;
  EXPECT_EQ(truncated.body["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(truncated.body["choices"][0]["text"], shorter.body["choices"][0]["text"]) << "the echoed short prompt, then the same answer";
  json text_body = short_body;
  const HttpAnswer decoded = Send(*server_, "POST", "/detokenize", json{{"tokens", last}}.dump());
  ASSERT_EQ(decoded.status, 200);
  text_body["prompt"] = "Some words before. " + decoded.body["prompt"].get<std::string>();
  text_body["truncate_prompt_tokens"] = 12;
  const HttpAnswer text_truncated = Complete(*server_, text_body);
  ASSERT_EQ(text_truncated.status, 200) << text_truncated.body;
  EXPECT_EQ(text_truncated.body["usage"]["prompt_tokens"], 12);
  EXPECT_TRUE(absl::StartsWith(text_truncated.body["choices"][0]["text"].get<std::string>(), decoded.body["prompt"].get<std::string>()))
      << "a text prompt's echo is the text of the tokens kept: " << text_truncated.body;

  json whole = body;
  whole["truncate_prompt_tokens"] = -1;
  const HttpAnswer kept = Complete(*server_, whole);
  ASSERT_EQ(kept.status, 200) << kept.body;
  EXPECT_EQ(kept.body["usage"]["prompt_tokens"], ids.size()) << "-1: the context's worth, the whole prompt here";
  for (const int bad : {0, -2, 1 << 20}) {
    json refused = body;
    refused["truncate_prompt_tokens"] = bad;
    const HttpAnswer answer = Complete(*server_, refused);
    EXPECT_EQ(answer.status, 400) << bad;
    EXPECT_EQ(answer.body["error"]["param"], "truncate_prompt_tokens") << bad << ": " << answer.body;
  }
}

// GET /version (vLLM's) says the build the metrics' arach_build_info says (this server takes no keys: open).
TEST_F(HttpFixtureServer, VersionSaysWhatWasBuilt) {
  const HttpAnswer version = Send(*server_, "GET", "/version");
  ASSERT_EQ(version.status, 200) << version.body;
  ASSERT_TRUE(version.body["version"].is_string() && version.body["git_sha"].is_string()) << version.body;
  EXPECT_FALSE(version.body["version"].get<std::string>().empty());
  EXPECT_EQ(Metrics(*server_).Sum("arach_build_info", {{"version", version.body["version"]}, {"git_sha", version.body["git_sha"]}}), 1.0)
      << version.body;
}

// return_token_ids (vLLM's): each choice lists its generated ids (gRPC Generate's for the same greedy request) and its
// prompt's; streamed, each chunk its new ids and the first chunk the prompt's.
// allowed_token_ids and bad_words over both APIs: the same greedy ids, within the allowed set, without the bad word.
TEST_F(HttpFixtureServer, AllowedTokenIdsAndBadWordsReachTheEngineOverBothApis) {
  const std::vector<int32_t> allowed = {11, 13, 198, 262, 290, 286};  // , . \n the and of
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true},
                     {"return_token_ids", true}, {"allowed_token_ids", allowed}, {"bad_words", {" the"}}};
  const HttpAnswer whole = Complete(*server_, body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const std::vector<int32_t> ids = whole.body["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), 10u);
  for (int32_t id : ids) {
    EXPECT_THAT(allowed, ::testing::Contains(id));
    EXPECT_NE(id, 262) << "\" the\" is a bad word";
  }
  arach::v1::GenerateRequest request;
  for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) request.mutable_token_ids()->add_ids(id);
  request.set_max_tokens(10);
  request.set_ignore_eos(true);
  request.mutable_sampling()->set_temperature(0.0f);
  for (int32_t id : allowed) request.mutable_sampling()->add_allowed_token_ids(id);
  request.mutable_sampling()->add_bad_words(" the");
  std::vector<int32_t> grpc_ids;
  ASSERT_TRUE(client_->Generate(request, [&](const arach::v1::GenerateResponse& r) {
    grpc_ids.insert(grpc_ids.end(), r.token_ids().begin(), r.token_ids().end());
  }).ok());
  EXPECT_EQ(grpc_ids, ids);
  request.mutable_sampling()->add_bad_words("\t");
  const grpc::Status refused = client_->Generate(request, [](const arach::v1::GenerateResponse&) {});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), ::testing::HasSubstr("sampling.bad_words[1]"));
}

TEST_F(HttpFixtureServer, ReturnTokenIdsListsTheGeneratedAndPromptIds) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true},
                     {"return_token_ids", true}};
  const HttpAnswer whole = Complete(*server_, body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  arach::v1::GenerateRequest request;
  for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) request.mutable_token_ids()->add_ids(id);
  request.set_max_tokens(10);
  request.set_ignore_eos(true);
  request.mutable_sampling()->set_temperature(0.0f);
  std::vector<int32_t> grpc_ids;
  ASSERT_TRUE(client_->Generate(request, [&](const arach::v1::GenerateResponse& r) {
    grpc_ids.insert(grpc_ids.end(), r.token_ids().begin(), r.token_ids().end());
  }).ok());
  const json& choice = whole.body["choices"][0];
  EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(), grpc_ids);
  EXPECT_EQ(choice["prompt_token_ids"], PromptIds());

  json streamed = body;
  streamed["stream"] = true;
  const StreamResult stream = Stream(*server_, streamed);
  ASSERT_EQ(stream.status, 200);
  std::vector<int32_t> joined;
  int with_prompt = 0;
  for (size_t i = 0; i < stream.events.size(); ++i) {
    if (stream.events[i] == "[DONE]") continue;
    const json chunk_choice = json::parse(stream.events[i])["choices"][0];
    for (int32_t id : chunk_choice["token_ids"]) joined.push_back(id);
    if (chunk_choice.contains("prompt_token_ids")) {
      EXPECT_EQ(i, 0u) << "the prompt's ids come in the first chunk";
      EXPECT_EQ(chunk_choice["prompt_token_ids"], PromptIds());
      ++with_prompt;
    }
  }
  EXPECT_EQ(joined, grpc_ids);
  EXPECT_EQ(with_prompt, 1);
  EXPECT_FALSE(Complete(*server_, {{"model", "gpt2-tiny"}, {"prompt", "a"}, {"max_tokens", 1}}).body["choices"][0].contains("token_ids"))
      << "only when asked";
}

// stream_options.continuous_usage_stats (vLLM's): every chunk carries its choice's usage so far, growing by the
// chunk's tokens to the final usage; it needs include_usage.
TEST_F(HttpFixtureServer, ContinuousUsageCountsEachChunksTokens) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", PromptIds()}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true},
                     {"stream", true}, {"return_token_ids", true},
                     {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
  const StreamResult stream = Stream(*server_, body);
  ASSERT_EQ(stream.status, 200);
  int counted = 0, chunks = 0;
  for (const std::string& event : stream.events) {
    if (event == "[DONE]") continue;
    const json chunk = json::parse(event);
    ASSERT_TRUE(chunk.contains("usage")) << event;
    if (chunk["choices"].empty()) {  // the include_usage chunk
      EXPECT_EQ(chunk["usage"]["completion_tokens"], 12);
      continue;
    }
    ++chunks;
    counted += static_cast<int>(chunk["choices"][0]["token_ids"].size());
    EXPECT_EQ(chunk["usage"]["completion_tokens"], counted) << event;
    EXPECT_EQ(chunk["usage"]["prompt_tokens"], PromptIds().size());
    EXPECT_EQ(chunk["usage"]["total_tokens"], PromptIds().size() + counted);
  }
  EXPECT_EQ(counted, 12);
  EXPECT_GT(chunks, 1);
  json without_usage = body;
  without_usage["stream_options"] = {{"continuous_usage_stats", true}};
  const HttpAnswer refused = Complete(*server_, without_usage);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body["error"]["param"], "stream_options.continuous_usage_stats") << refused.body;
}

TEST_F(HttpFixtureServer, EchoScoringEqualsGrpcScore) {
  const json body = {{"model", "gpt2-tiny:arach"}, {"prompt", PromptIds()}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}};
  const HttpAnswer answer = Complete(*server_, body);
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json& logprobs = answer.body["choices"][0]["logprobs"];
  arach::v1::ScoreRequest request;
  for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) request.add_inputs()->mutable_token_ids()->add_ids(id);
  request.clear_inputs();
  auto* ids = request.add_inputs()->mutable_token_ids();
  for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) ids->add_ids(id);
  request.mutable_variant()->set_arach(true);
  arach::v1::ScoreResponse scored;
  ASSERT_TRUE(client_->Score(request, &scored).ok());
  const auto& reference = scored.results(0).logprobs();
  ASSERT_EQ(logprobs["token_logprobs"].size(), static_cast<size_t>(reference.size()) + 1);
  EXPECT_TRUE(logprobs["token_logprobs"][0].is_null()) << "the first token has no log-prob";
  EXPECT_TRUE(logprobs["top_logprobs"][0].is_null());
  for (int i = 0; i < reference.size(); ++i) {
    EXPECT_NEAR(logprobs["token_logprobs"][i + 1].get<double>(), reference[i], 1e-4) << i;
    EXPECT_LE(logprobs["top_logprobs"][i + 1].size(), 2u);
  }
  EXPECT_EQ(answer.body["usage"]["completion_tokens"], 0);
  EXPECT_EQ(logprobs["text_offset"][0], 0);

  // logprobs: 0 (no alternatives): every token after the first has an object with itself, prompt and generated.
  json no_alternatives = body;
  no_alternatives["logprobs"] = 0;
  no_alternatives["max_tokens"] = 2;
  const HttpAnswer zero = Complete(*server_, no_alternatives);
  ASSERT_EQ(zero.status, 200) << zero.body;
  const json& zero_logprobs = zero.body["choices"][0]["logprobs"];
  ASSERT_EQ(zero_logprobs["top_logprobs"].size(), static_cast<size_t>(reference.size()) + 3);
  EXPECT_TRUE(zero_logprobs["top_logprobs"][0].is_null());
  for (size_t t = 1; t < zero_logprobs["top_logprobs"].size(); ++t) {
    const json& top = zero_logprobs["top_logprobs"][t];
    ASSERT_TRUE(top.is_object()) << t << ": " << top;
    ASSERT_EQ(top.size(), 1u) << t;
    EXPECT_EQ(top.begin().key(), zero_logprobs["tokens"][t]) << t;
    EXPECT_EQ(top.begin().value(), zero_logprobs["token_logprobs"][t]) << t;
  }
}

TEST_F(HttpFixtureServer, ErrorsHaveTheirStatusAndNameTheirParameter) {
  struct Case {
    std::string body;
    int status;
    std::string param;  // "" = null
  };
  const std::vector<Case> cases = {
      {"{not json", 400, "body"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "temperature": "hot"})", 400, "temperature"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "temperature": -1})", 400, "temperature"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "top_p": 0})", 400, "top_p"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "max_tokens": 999999})", 400, "max_tokens"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "logprobs": 21})", 400, "logprobs"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "presence_penalty": 3})", 400, "presence_penalty"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "logit_bias": {"99999999": 1}})", 400, "logit_bias"},
      {R"({"model": "gpt2-tiny", "prompt": ["a", [1, 99999999]]})", 400, "prompt[1][1]"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "allowed_token_ids": []})", 400, "allowed_token_ids"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "allowed_token_ids": [5, 99999999]})", 400, "allowed_token_ids[1]"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "bad_words": "word"})", 400, "bad_words"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "bad_words": ["ok", " \n"]})", 400, "bad_words[1]"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "allowed_token_ids": [11], "bad_words": [","]})", 400, "bad_words"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "stop": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"]})",
       400, "stop"},
      {R"({"model": "gpt2-tiny:turbo", "prompt": "a"})", 400, "model"},
      {R"({"model": "gpt2-tiny:arach", "prompt": "a", "arach_offset": 1e39})", 400, "arach_offset"},
      {R"({"model": "llama-70b", "prompt": "a"})", 404, "model"},
      {json({{"model", "gpt2-tiny"}, {"prompt", std::string(5000, 'a')}}).dump(), 400, "prompt"},
      {json({{"model", "gpt2-tiny"}, {"prompt", std::string(70000, 'a')}}).dump(), 413, "body"},
      {R"({"model": "gpt2-tiny", "prompt": "a", "x": )" + std::string(30000, '[') + std::string(30000, ']') + "}", 400, "body"},
  };
  for (const Case& c : cases) {
    const HttpAnswer answer = Send(*server_, "POST", "/v1/completions", c.body);
    EXPECT_EQ(answer.status, c.status) << c.body.substr(0, 120) << " -> " << answer.body;
    ASSERT_TRUE(answer.body.is_object() && answer.body.contains("error")) << answer.body;
    const json& error = answer.body["error"];
    EXPECT_TRUE(error["message"].is_string());
    EXPECT_TRUE(error["type"].is_string());
    EXPECT_EQ(error["param"].is_null() ? "" : error["param"].get<std::string>(), c.param) << error;
  }
  EXPECT_EQ(Send(*server_, "GET", "/v1/nothing").status, 404);
}

TEST_F(HttpFixtureServer, CompressedBodiesAreRefusedUnread) {
  // gzip of {"model": "gpt2-tiny", "prompt": "a", "max_tokens": 1}: the library would inflate it, and a body of a
  // few hundred kB inflated past --max_request_bytes to hundreds of MB.
  const std::string gzipped(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x56\xca\xcd\x4f\x49\xcd\x51\xb2\x52\x50\x4a\x2f\x28\x31\xd2\x2d"
      "\xc9\xcc\xab\x54\xd2\x51\x50\x2a\x28\xca\xcf\x2d\x28\x01\x09\x27\x82\xb8\xb9\x89\x15\xf1\x25\xf9\xd9\xa9\x79"
      "\xc5\x40\x21\xc3\x5a\x00\xc4\xed\x18\x5a\x36\x00\x00\x00",
      68);
  const HttpAnswer refused = Send(*server_, "POST", "/v1/completions", gzipped,
                                  {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(refused.status, 415) << refused.body;
  EXPECT_EQ(refused.body["error"]["message"], "body: Content-Encoding 'gzip' is not accepted; send the body uncompressed");
  const HttpAnswer identity = Send(*server_, "POST", "/v1/completions", R"({"model": "gpt2-tiny", "prompt": "a", "max_tokens": 1})",
                                   {{"Content-Encoding", "identity"}});
  EXPECT_EQ(identity.status, 200) << identity.body;
}

TEST_F(HttpFixtureServer, NChoicesWithSeedsAndLogprobs) {
  const json body = {{"model", "gpt2-tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 1.0},
                     {"n", 2},           {"seed", 11},                   {"logprobs", 3},  {"ignore_eos", true}};
  const HttpAnswer first = Complete(*server_, body);
  const HttpAnswer again = Complete(*server_, body);
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.body["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& choice = first.body["choices"][i];
    EXPECT_EQ(choice["index"], i);
    EXPECT_EQ(choice["text"], again.body["choices"][i]["text"]) << "seed + index fixes each choice";
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 8u);
    std::string joined;
    for (size_t t = 0; t < 8; ++t) {
      EXPECT_EQ(lp["text_offset"][t], joined.size());
      joined += lp["tokens"][t].get<std::string>();
      EXPECT_LE(lp["token_logprobs"][t].get<double>(), 0.0);
      EXPECT_GE(lp["top_logprobs"][t].size(), 3u);
    }
    EXPECT_EQ(joined, choice["text"]) << "the pieces join to the text";
  }
  EXPECT_EQ(first.body["usage"]["completion_tokens"], 16);
}

TEST_F(HttpFixtureServer, RequestIdIsEchoedAndLogged) {
  const HttpAnswer answer = Complete(*server_, {{"model", "gpt2-tiny:base"}, {"prompt", "Hello"}, {"max_tokens", 3}},
                                     {{"x-request-id", "trace-42"}});
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.header("x-request-id"), "trace-42");
  EXPECT_EQ(answer.body["id"], "cmpl-trace-42");
  const HttpAnswer generated = Complete(*server_, {{"model", "gpt2-tiny"}, {"prompt", "Hello"}, {"max_tokens", 1}});
  EXPECT_EQ(generated.header("x-request-id").size(), 32u) << "an id is made when the client gives none";
  const HttpAnswer spaced = Complete(*server_, {{"model", "gpt2-tiny"}, {"prompt", "Hello"}, {"max_tokens", 1}},
                                     {{"x-request-id", "two words"}});
  ASSERT_EQ(spaced.status, 200) << "a proxy's header is replaced, not refused";
  EXPECT_EQ(spaced.header("x-request-id").size(), 32u) << "an id with a space is not one token of the log line";
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    logged = server_->Output().find("request id=trace-42 api=http route=/v1/completions key=open variant=base status=200 prompt_tokens=") !=
             std::string::npos;
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(logged) << server_->Output();
}

TEST_F(HttpFixtureServer, MetricsOnTheHttpPortCountRequestsByVariant) {
  const std::string labels = "route=\"/v1/completions\",status=\"200\",variant=\"arach\"";
  const testing::PrometheusText before = Metrics(*server_);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Complete(*server_, {{"model", "gpt2-tiny:arach"}, {"prompt", "Hi"}, {"max_tokens", 2}}).status, 200);
  }
  ASSERT_EQ(Complete(*server_, {{"model", "nope"}, {"prompt", "Hi"}}).status, 404);
  EXPECT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return m.Value("arach_http_requests_total", labels) - before.Value("arach_http_requests_total", labels) == 2 &&
           m.Value("arach_http_requests_total", "route=\"/v1/completions\",status=\"404\",variant=\"none\"") -
                   before.Value("arach_http_requests_total", "route=\"/v1/completions\",status=\"404\",variant=\"none\"") ==
               1;
  }));
  EXPECT_EQ(Metrics(*server_).types.count("arach_http_requests_total"), 1u);
}

}  // namespace
}  // namespace arach
