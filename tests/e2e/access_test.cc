// Who may call, how much and who goes first, against the real server process (a tiny random GPT-2, or the slow
// model where the order of requests matters): API keys on both APIs (missing, wrong, valid, revoked by a
// SIGHUP reload), the open probes and /metrics, scopes (diagnostics, experiment), per-key requests and tokens
// per minute with Retry-After and x-ratelimit-* headers, HTTPS and mutual TLS on the HTTP API with a
// certificate rotated on SIGHUP, request priority under a full batch, gRPC reflection off, and the cap on
// prompts per request.
#include <httplib.h>
#include <grpcpp/generic/generic_stub.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/arach_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/certificates.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using client::ArachClient;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ServerProcess;

using Answer = testing::HttpAnswer;
using testing::AnswerOf;

httplib::Headers Bearer(const std::string& key) { return key.empty() ? httplib::Headers{} : httplib::Headers{{"Authorization", "Bearer " + key}}; }

// POST /v1/completions with `body` over plain HTTP.
Answer Complete(const ServerProcess& server, const json& body, const std::string& key) {
  return testing::HttpSend(server.http_address(), "POST", "/v1/completions", body.dump(), Bearer(key));
}
Answer Get(const ServerProcess& server, const std::string& path, const std::string& key = "") {
  return testing::HttpSend(server.http_address(), "GET", path, "", Bearer(key));
}

json SmallCompletion(int max_tokens = 2) { return {{"model", "tiny"}, {"prompt", {5, 6, 7}}, {"max_tokens", max_tokens}, {"temperature", 0}}; }

// One tiny generation over gRPC; its status.
grpc::Status GrpcGenerate(const ServerProcess& server, const std::string& key, int priority = 0) {
  auto client = ArachClient::Connect(server.grpc_address(), {}, key);
  arach::v1::GenerateRequest r;
  for (int id : {5, 6, 7}) r.mutable_token_ids()->add_ids(id);
  r.set_max_tokens(2);
  r.set_priority(priority);
  return client->Generate(r, [](const auto&) {}, std::chrono::system_clock::now() + std::chrono::seconds(30));
}

// Waits until the server's output holds `text` (a line it prints), for up to 10 s.
bool EventuallyPrints(ServerProcess& server, const std::string& text) {
  for (int i = 0; i < 400; ++i) {
    if (server.Output().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

class Keys : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.File("keys")) << "# test keys\n"
                                     << "full:sk-full-secret:all\n"
                                     << "plain:sk-plain-secret\n"
                                     << "urgent:sk-urgent-secret::priority=-5\n";
  }
  std::unique_ptr<ServerProcess> Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                     "--kv_cache_bytes=16777216", "--api_key_file=" + dir_.File("keys")};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::StartServerOrFail(testing::ServerBinary(), args);
  }
  testing::ScopedTempDir dir_;
};

TEST_F(Keys, HttpAndGrpcRefuseMissingAndWrongKeysAndServeValidOnes) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Output(), HasSubstr("requires an API key: 3 configured"));

  const Answer missing = Complete(*server, SmallCompletion(), "");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.header("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(missing.body["error"]["type"], "authentication_error");
  EXPECT_EQ(missing.body["error"]["code"], "invalid_api_key");
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-wrong").status, 401);
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-full-secret").status, 200);
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-plain-secret").status, 200);

  EXPECT_EQ(Get(*server, "/health").status, 200) << "probes stay open";
  EXPECT_EQ(Get(*server, "/ready").status, 200);
  EXPECT_EQ(Get(*server, "/metrics").status, 200) << "open without --metrics_auth";
  EXPECT_EQ(Get(*server, "/v1/models").status, 401);
  EXPECT_EQ(Get(*server, "/v1/models", "sk-plain-secret").status, 200);
  EXPECT_EQ(Get(*server, "/version").status, 401) << "the build is told to callers with a key";
  EXPECT_EQ(Get(*server, "/version", "sk-plain-secret").status, 200);

  EXPECT_EQ(GrpcGenerate(*server, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GrpcGenerate(*server, "sk-wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(GrpcGenerate(*server, "sk-plain-secret").ok());
  auto client = ArachClient::Connect(server->grpc_address());
  EXPECT_TRUE(client->WaitServing(std::chrono::seconds(5))) << "gRPC health stays open";

  // The key's name is in the metrics and the log, its secret nowhere.
  const testing::PrometheusText metrics = testing::MetricsOrFail(*server);
  EXPECT_EQ(metrics.Sum("arach_requests_total", {{"key", "plain"}}), 2);
  EXPECT_EQ(metrics.Sum("arach_requests_rejected_total", {{"key", "unknown"}, {"code", "unauthenticated"}}), 4)
      << "two completions and two Generate calls";
  EXPECT_THAT(server->Output(), HasSubstr("key=plain variant=base status=200"));
  const std::string scrape = *testing::HttpGetMetrics(server->metrics_address());
  for (const std::string& text : {server->Output(), scrape}) {
    EXPECT_THAT(text, Not(HasSubstr("sk-plain-secret")));
    EXPECT_THAT(text, Not(HasSubstr("sk-full-secret")));
  }

  // The other routes of the HTTP API take the key as well (the model has no chat template: responses is a 400).
  for (const auto& [method, path, body, keyed] : std::vector<std::tuple<std::string, std::string, std::string, int>>{
           {"POST", "/v1/responses", R"({"model": "tiny", "input": "x", "max_output_tokens": 1})", 400},
           {"GET", "/v1/responses/resp_1", "", 404},
           {"POST", "/tokenize", R"({"prompt": "x"})", 200},
           {"POST", "/detokenize", R"({"tokens": [5]})", 200}}) {
    EXPECT_EQ(testing::HttpSend(server->http_address(), method, path, body).status, 401) << path;
    EXPECT_EQ(testing::HttpSend(server->http_address(), method, path, body, Bearer("sk-plain-secret")).status, keyed) << path;
  }
}

TEST_F(Keys, MetricsAuthKeysTheMetricsToo) {
  auto server = Start({"--metrics_auth"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(*server, "/metrics").status, 401);
  EXPECT_EQ(Get(*server, "/metrics", "sk-plain-secret").status, 200);
  EXPECT_EQ(Get(*server, "/health").status, 200);
}

TEST_F(Keys, SighupRevokesAKeyAndAddsAnotherWithoutDroppingCalls) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(Complete(*server, SmallCompletion(), "sk-plain-secret").status, 200);
  std::ofstream(dir_.File("keys")) << "full:sk-full-secret:all\nnewcomer:sk-new-secret\n";
  server->Signal(SIGHUP);
  ASSERT_TRUE(EventuallyPrints(*server, "reloaded on SIGHUP: API keys 2 configured")) << server->Output();
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-plain-secret").status, 401) << "revoked";
  EXPECT_EQ(GrpcGenerate(*server, "sk-plain-secret").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-new-secret").status, 200);
  EXPECT_TRUE(GrpcGenerate(*server, "sk-full-secret").ok());
  // A broken file keeps the keys in use.
  std::ofstream(dir_.File("keys")) << "not a key line\n";
  server->Signal(SIGHUP);
  ASSERT_TRUE(EventuallyPrints(*server, "API keys kept")) << server->Output();
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-new-secret").status, 200);
}

TEST_F(Keys, ScopesGuardDiagnosticsAndChoosingAVariantDuringAnExperiment) {
  auto server = Start({"--experiment=base=50,arach=50"});
  ASSERT_NE(server, nullptr);
  json diagnosed = SmallCompletion();
  diagnosed["diagnostics"] = true;
  const Answer denied = Complete(*server, diagnosed, "sk-plain-secret");
  EXPECT_EQ(denied.status, 403);
  EXPECT_EQ(denied.body["error"]["type"], "permission_error");
  EXPECT_THAT(denied.body["error"]["message"].get<std::string>(), HasSubstr("the key 'plain' does not have the scope 'diagnostics'"));
  EXPECT_EQ(Complete(*server, diagnosed, "sk-full-secret").status, 200);

  json chosen = SmallCompletion();
  chosen["model"] = "tiny:arach";
  const Answer chooses = Complete(*server, chosen, "sk-plain-secret");
  EXPECT_EQ(chooses.status, 403);
  EXPECT_THAT(chooses.body["error"]["message"].get<std::string>(), HasSubstr("scope 'experiment'"));
  EXPECT_EQ(Complete(*server, chosen, "sk-full-secret").status, 200);
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-plain-secret").status, 200) << "the experiment decides: no scope needed";

  auto plain = ArachClient::Connect(server->grpc_address(), {}, "sk-plain-secret");
  arach::v1::ScoreRequest score;
  score.add_inputs()->mutable_token_ids()->add_ids(5);
  score.mutable_inputs(0)->mutable_token_ids()->add_ids(6);
  score.set_diagnostics(true);
  arach::v1::ScoreResponse response;
  const grpc::Status refused = plain->Score(score, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(refused.error_message(), HasSubstr("scope 'diagnostics'"));
  arach::v1::GenerateRequest generate;
  generate.set_text("hi");
  generate.set_max_tokens(1);
  generate.mutable_variant()->set_arach(true);
  EXPECT_EQ(plain->Generate(generate, [](const auto&) {}).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  auto full = ArachClient::Connect(server->grpc_address(), {}, "sk-full-secret");
  EXPECT_TRUE(full->Generate(generate, [](const auto&) {}).ok());
  EXPECT_TRUE(full->Score(score, &response).ok());
}

// The prompt tokens a completion of a 40-token prompt found in the prefix cache (blocks of 16: 32 when found).
int CachedTokensOf(const ServerProcess& server, const std::string& key, const std::string& salt = "") {
  json body = {{"model", "tiny"}, {"max_tokens", 1}, {"temperature", 0}, {"prompt", json::array()}};
  for (int i = 0; i < 40; ++i) body["prompt"].push_back(100 + i);
  if (!salt.empty()) body["cache_salt"] = salt;
  const Answer answer = Complete(server, body, key);
  EXPECT_EQ(answer.status, 200) << answer.body.dump();
  return answer.body["usage"]["prompt_tokens_details"].value("cached_tokens", -1);
}

// The same over gRPC Generate: Finish.usage.cached_prompt_tokens.
int GrpcCachedTokensOf(const ServerProcess& server, const std::string& key, const std::string& salt = "") {
  auto client = ArachClient::Connect(server.grpc_address(), {}, key);
  arach::v1::GenerateRequest r;
  for (int i = 0; i < 40; ++i) r.mutable_token_ids()->add_ids(100 + i);
  r.set_max_tokens(1);
  r.set_cache_salt(salt);
  int cached = -1;
  EXPECT_TRUE(client->Generate(r, [&](const arach::v1::GenerateResponse& m) {
                      if (m.has_finish()) cached = static_cast<int>(m.finish().usage().cached_prompt_tokens());
                    }).ok());
  return cached;
}

TEST_F(Keys, CacheSaltsAndPerKeyIsolationKeepPrefixCacheHitsWithinTheirNamespace) {
  {  // Shared by default: another key finds the blocks; a salt keeps its own.
    auto server = Start({"--block_size=16"});
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret"), 0);
    EXPECT_EQ(CachedTokensOf(*server, "sk-plain-secret"), 32);
    EXPECT_EQ(CachedTokensOf(*server, "sk-plain-secret", "salt-one"), 0);
    EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret", "salt-one"), 32) << "a salt is a namespace of its own, not a key's";
    EXPECT_EQ(GrpcCachedTokensOf(*server, "sk-plain-secret", "salt-one"), 32) << "gRPC shares HTTP's namespaces";
    EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret", "salt-two"), 0);

    json empty = SmallCompletion();
    empty["cache_salt"] = "";
    const Answer refused = Complete(*server, empty, "sk-full-secret");
    EXPECT_EQ(refused.status, 400);
    EXPECT_EQ(refused.body["error"]["param"], "cache_salt");
  }
  auto server = Start({"--block_size=16", "--prefix_cache_per_key"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret"), 0);
  EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret"), 32);
  EXPECT_EQ(GrpcCachedTokensOf(*server, "sk-full-secret"), 32);
  EXPECT_EQ(CachedTokensOf(*server, "sk-plain-secret"), 0) << "another key's blocks are not found";
  EXPECT_EQ(GrpcCachedTokensOf(*server, "sk-plain-secret"), 32);
  EXPECT_EQ(CachedTokensOf(*server, "sk-plain-secret", "salt-one"), 0);
  EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret", "salt-one"), 0) << "the same salt under another key";
  EXPECT_EQ(CachedTokensOf(*server, "sk-full-secret", "salt-one"), 32);
}

// CORS: a browser's preflight is answered before any key check for an allowed origin (the headers it asks for
// echoed) and refused for another; answers to an allowed origin, errors and streams included, carry
// Access-Control-Allow-Origin and expose our headers; another origin's request is served without them; a server
// without --cors_allowed_origins answers no preflight.
TEST_F(Keys, CorsLetsTheAllowedOriginsBrowsersCallAndNoOther) {
  auto server = Start({"--cors_allowed_origins=https://app.example.com,http://localhost:3000"});
  ASSERT_NE(server, nullptr);
  const std::string app = "https://app.example.com";
  const httplib::Headers preflight = {{"Origin", app}, {"Access-Control-Request-Method", "POST"},
                                      {"Access-Control-Request-Headers", "authorization, content-type"}};
  const Answer allowed = testing::HttpSend(server->http_address(), "OPTIONS", "/v1/chat/completions", "", preflight);
  EXPECT_EQ(allowed.status, 204);
  EXPECT_EQ(allowed.header("Access-Control-Allow-Origin"), app);
  EXPECT_EQ(allowed.header("Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_THAT(allowed.header("Access-Control-Allow-Methods"), HasSubstr("POST"));
  EXPECT_EQ(allowed.header("Vary"), "Origin");
  EXPECT_EQ(allowed.header("Access-Control-Allow-Credentials"), "");

  httplib::Headers evil = preflight;
  evil.erase("Origin");
  evil.emplace("Origin", "https://evil.example.com");
  const Answer refused = testing::HttpSend(server->http_address(), "OPTIONS", "/v1/chat/completions", "", evil);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.header("Access-Control-Allow-Origin"), "");

  httplib::Headers from_app = Bearer("sk-plain-secret");
  from_app.emplace("Origin", app);
  const Answer served = testing::HttpSend(server->http_address(), "POST", "/v1/completions", SmallCompletion().dump(), from_app);
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.header("Access-Control-Allow-Origin"), app);
  EXPECT_THAT(served.header("Access-Control-Expose-Headers"), HasSubstr("x-request-id"));
  const Answer unauthenticated = testing::HttpSend(server->http_address(), "POST", "/v1/completions", SmallCompletion().dump(),
                                                   {{"Origin", app}});
  EXPECT_EQ(unauthenticated.status, 401);
  EXPECT_EQ(unauthenticated.header("Access-Control-Allow-Origin"), app) << "the page may read why it was refused";
  json streamed = SmallCompletion();
  streamed["stream"] = true;
  const Answer stream = testing::HttpSend(server->http_address(), "POST", "/v1/completions", streamed.dump(), from_app);
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("Access-Control-Allow-Origin"), app);
  httplib::Headers from_evil = Bearer("sk-plain-secret");
  from_evil.emplace("Origin", "https://evil.example.com");
  const Answer other = testing::HttpSend(server->http_address(), "POST", "/v1/completions", SmallCompletion().dump(), from_evil);
  EXPECT_EQ(other.status, 200) << "served; the browser keeps it from the page";
  EXPECT_EQ(other.header("Access-Control-Allow-Origin"), "");

  auto closed = Start();
  ASSERT_NE(closed, nullptr);
  const Answer none = testing::HttpSend(closed->http_address(), "OPTIONS", "/v1/chat/completions", "", preflight);
  EXPECT_NE(none.status, 204);
  EXPECT_EQ(none.header("Access-Control-Allow-Origin"), "");
}

TEST(RateLimits, RequestsPerMinuteBurstThen429WithRetryAfterThenPass) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "limited:sk-limited::rpm=120\nother:sk-other\n";  // 2 a second after a burst of 120
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--api_key_file=" + dir.File("keys")});
  ASSERT_NE(server, nullptr);
  int passed = 0;
  Answer refused;
  // The bucket refills 2 a second while the burst runs: a refusal comes after 120 passes plus those refills.
  for (int i = 0; i < 400 && refused.status == 0; ++i) {
    Answer a = Complete(*server, SmallCompletion(1), "sk-limited");
    if (a.status == 200) {
      ++passed;
      EXPECT_EQ(a.header("x-ratelimit-limit-requests"), "120");
    } else {
      refused = a;
    }
  }
  EXPECT_GE(passed, 120) << "the burst of a full bucket passes";
  ASSERT_EQ(refused.status, 429);
  EXPECT_EQ(refused.body["error"]["type"], "rate_limit_error");
  EXPECT_EQ(refused.header("Retry-After"), "1");
  EXPECT_EQ(refused.header("x-ratelimit-remaining-requests"), "0");
  EXPECT_FALSE(refused.header("x-ratelimit-reset-requests").empty());
  const auto refused_at = std::chrono::steady_clock::now();
  EXPECT_EQ(Complete(*server, SmallCompletion(1), "sk-other").status, 200) << "another key has its own limits";
  // Both APIs share the bucket: gRPC calls pass only by the refills since the refusal (2 a second), where a
  // bucket of its own would pass all 20.
  int grpc_passed = 0;
  grpc::Status grpc_refused;
  for (int i = 0; i < 20 && grpc_refused.ok(); ++i) {
    grpc::Status status = GrpcGenerate(*server, "sk-limited");
    if (status.ok()) {
      ++grpc_passed;
    } else {
      grpc_refused = status;
    }
  }
  const double since_refusal_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - refused_at).count();
  EXPECT_EQ(grpc_refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << "both APIs share the bucket";
  EXPECT_LE(grpc_passed, 1 + static_cast<int>(2 * since_refusal_s)) << "gRPC calls passed beyond the refills";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the Retry-After
  EXPECT_EQ(Complete(*server, SmallCompletion(1), "sk-limited").status, 200);
  const testing::PrometheusText metrics = testing::MetricsOrFail(*server);
  EXPECT_GE(metrics.Sum("arach_rate_limited_total", {{"key", "limited"}, {"reason", "rpm"}}), 2);
}

TEST(RateLimits, TokensPerMinuteCountPromptAndMaxTokens) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "small:sk-small::tpm=100\n";
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--api_key_file=" + dir.File("keys")});
  ASSERT_NE(server, nullptr);
  const Answer too_big = Complete(*server, SmallCompletion(98), "sk-small");  // 3 + 98 tokens > 100
  EXPECT_EQ(too_big.status, 400);
  EXPECT_EQ(too_big.body["error"]["param"], "max_tokens");
  json ignore_eos = SmallCompletion(60);
  ignore_eos["ignore_eos"] = true;
  EXPECT_EQ(Complete(*server, ignore_eos, "sk-small").status, 200);  // 63 reserved and used
  const Answer over = Complete(*server, ignore_eos, "sk-small");      // 63 more: 37 left
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.header("x-ratelimit-limit-tokens"), "100");
  EXPECT_EQ(Complete(*server, SmallCompletion(10), "sk-small").status, 200) << "a request that fits what is left passes";
}

TEST(RateLimits, APromptScoredForManyChoicesIsChargedOnce) {
  // max_tokens 0 with echo only scores the prompt: n choices are one engine request (the others copy its answer),
  // so the key pays for one prompt, as it reserved.
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "small:sk-small::tpm=100\n";
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--api_key_file=" + dir.File("keys")});
  ASSERT_NE(server, nullptr);
  json prompt = json::array();
  for (int i = 0; i < 30; ++i) prompt.push_back(5 + i);
  const Answer scored = Complete(*server, {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}, {"n", 3}},
                                 "sk-small");
  ASSERT_EQ(scored.status, 200) << scored.body;
  ASSERT_EQ(scored.body["choices"].size(), 3u);
  EXPECT_EQ(scored.body["usage"]["prompt_tokens"], 30);
  json ignore_eos = SmallCompletion(60);
  ignore_eos["ignore_eos"] = true;
  const Answer after = Complete(*server, ignore_eos, "sk-small");  // 63 tokens: they fit the 70 left, not 10
  EXPECT_EQ(after.status, 200) << after.body;
}

TEST(RateLimits, ManyChoicesOfOnePromptPayForThePromptOnce) {
  // As the answer's usage counts them (and OpenAI bills them): the prompt once, each choice's tokens on their own.
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "small:sk-small::tpm=100\n";
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--api_key_file=" + dir.File("keys")});
  ASSERT_NE(server, nullptr);
  json prompt = json::array();
  for (int i = 0; i < 30; ++i) prompt.push_back(5 + i);
  const json three = {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 20}, {"n", 3}, {"ignore_eos", true}};
  const Answer answered = Complete(*server, three, "sk-small");  // 30 + 3 x 20 = 90 (three prompts would be 150)
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(answered.body["usage"]["prompt_tokens"], 30);
  EXPECT_EQ(answered.body["usage"]["completion_tokens"], 60);
  json rest = SmallCompletion(6);
  rest["ignore_eos"] = true;
  const Answer fits = Complete(*server, rest, "sk-small");  // 3 + 6 tokens: they fit the 10 left
  EXPECT_EQ(fits.status, 200) << fits.body << " (the key was charged 90, not 150)";
  rest["max_tokens"] = 40;
  EXPECT_EQ(Complete(*server, rest, "sk-small").status, 429) << "43 tokens, and the bucket holds about 1";
}

TEST(RateLimits, AChatWithoutMaxTokensRunsOnWithinTheLimitAndTheKeysBudget) {
  // As OpenAI's and vLLM's chat: no max_tokens is not 16 tokens but the rest of the context, here within
  // --max_tokens_limit, and for a key with a tokens-per-minute budget within what it leaves beside the prompt.
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "small:sk-small::tpm=40\npair:sk-pair::tpm=40\nbig:sk-big\n";
  std::ofstream(dir.File("chat.jinja")) << "{% for m in messages %}{{ m.content }}\n{% endfor %}";
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--api_key_file=" + dir.File("keys"),
                                                                    "--chat_template=" + dir.File("chat.jinja"), "--max_tokens_limit=50"});
  ASSERT_NE(server, nullptr);
  const json chat = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"ignore_eos", true}};
  const Answer big = testing::HttpSend(server->http_address(), "POST", "/v1/chat/completions", chat.dump(), Bearer("sk-big"));
  ASSERT_EQ(big.status, 200) << big.body;
  EXPECT_EQ(big.body["usage"]["completion_tokens"], 50) << "--max_tokens_limit";
  const Answer small = testing::HttpSend(server->http_address(), "POST", "/v1/chat/completions", chat.dump(), Bearer("sk-small"));
  ASSERT_EQ(small.status, 200) << small.body;
  EXPECT_EQ(small.body["usage"]["completion_tokens"].get<int>() + small.body["usage"]["prompt_tokens"].get<int>(), 40) << "tpm";
  json two_choices = chat;
  two_choices["n"] = 2;
  const Answer pair = testing::HttpSend(server->http_address(), "POST", "/v1/chat/completions", two_choices.dump(), Bearer("sk-pair"));
  ASSERT_EQ(pair.status, 200) << pair.body << " (the choices share what the prompt leaves of the budget)";
  // The prompt counts once (as the usage counts it, and OpenAI bills it), each choice its own tokens.
  const int pair_prompt = pair.body["usage"]["prompt_tokens"].get<int>();
  EXPECT_EQ(pair.body["usage"]["completion_tokens"].get<int>(), 2 * ((40 - pair_prompt) / 2)) << "tpm";
  EXPECT_EQ(Complete(*server, {{"model", "tiny"}, {"prompt", {5, 6, 7}}, {"ignore_eos", true}}, "sk-big").body["usage"]["completion_tokens"], 16)
      << "completions keep OpenAI's default of 16";

  auto client = ArachClient::Connect(server->grpc_address(), {}, "sk-big");
  arach::v1::ChatRequest grpc_chat;
  grpc_chat.add_messages()->set_role("user");
  grpc_chat.mutable_messages(0)->set_content("hi");
  grpc_chat.mutable_generation()->set_ignore_eos(true);
  uint32_t generated = 0;
  const grpc::Status status = client->Chat(grpc_chat, [&](const arach::v1::GenerateResponse& r) {
    if (r.has_finish()) generated = r.finish().usage().completion_tokens();
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(generated, 50u) << "gRPC Chat as HTTP chat";
}

// A refused TLS handshake closes the socket under the client's write: the write must fail, not kill the test.
void IgnoreSigpipe() { std::signal(SIGPIPE, SIG_IGN); }

TEST(Https, ServesTheApiOverTlsRefusesPlainHttpAndRotatesItsCertificateOnSighup) {
  IgnoreSigpipe();
  testing::Certificates certs;
  ASSERT_TRUE(certs.ok()) << "openssl failed";
  ASSERT_TRUE(certs.MakeOtherSet());
  const std::string cert = certs.File("served.pem"), key = certs.File("served.key");  // what the server reads
  std::filesystem::copy_file(certs.File("server.pem"), cert);
  std::filesystem::copy_file(certs.File("server.key"), key);
  auto server = testing::StartServerOrFail(testing::ServerBinary(),
                                           {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                            "--kv_cache_bytes=16777216", "--api_key=sk-root", "--http_tls_cert=" + cert,
                                            "--http_tls_key=" + key, "--metrics_listen=127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  auto https = [&](const std::string& ca) {
    httplib::SSLClient client("127.0.0.1", std::stoi(server->http_address().substr(server->http_address().rfind(':') + 1)));
    client.set_ca_cert_path(certs.File(ca).c_str());
    client.enable_server_certificate_verification(true);
    client.set_read_timeout(30, 0);
    return AnswerOf(client.Post("/v1/completions", Bearer("sk-root"), SmallCompletion().dump(), "application/json"));
  };
  EXPECT_EQ(https("ca.pem").status, 200);
  EXPECT_EQ(https("other-ca.pem").status, 0) << "a client that trusts another CA does not connect";
  EXPECT_EQ(Complete(*server, SmallCompletion(), "sk-root").status, 0) << "no plain HTTP on the TLS port";

  std::filesystem::copy_file(certs.File("other-server.pem"), cert, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(certs.File("other-server.key"), key, std::filesystem::copy_options::overwrite_existing);
  server->Signal(SIGHUP);
  ASSERT_TRUE(EventuallyPrints(*server, "HTTPS certificate read")) << server->Output();
  EXPECT_EQ(https("other-ca.pem").status, 200) << "new connections get the rotated certificate";
  EXPECT_EQ(https("ca.pem").status, 0);
}

TEST(Https, MutualTlsRefusesAClientWithoutACertificate) {
  IgnoreSigpipe();
  testing::Certificates certs;
  ASSERT_TRUE(certs.ok()) << "openssl failed";
  auto server = testing::StartServerOrFail(testing::ServerBinary(),
                                           {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                            "--kv_cache_bytes=16777216", "--http_tls_cert=" + certs.File("server.pem"),
                                            "--http_tls_key=" + certs.File("server.key"),
                                            "--http_tls_client_ca=" + certs.File("ca.pem"), "--metrics_listen=127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  const int port = std::stoi(server->http_address().substr(server->http_address().rfind(':') + 1));
  httplib::SSLClient anonymous("127.0.0.1", port);
  anonymous.set_ca_cert_path(certs.File("ca.pem").c_str());
  anonymous.enable_server_certificate_verification(true);
  EXPECT_EQ(AnswerOf(anonymous.Get("/health")).status, 0) << "the handshake fails without a client certificate";
  httplib::SSLClient with_cert("127.0.0.1", port, certs.File("client.pem"), certs.File("client.key"));
  with_cert.set_ca_cert_path(certs.File("ca.pem").c_str());
  with_cert.enable_server_certificate_verification(true);
  EXPECT_EQ(AnswerOf(with_cert.Get("/health")).status, 200);
}

TEST(Priority, AHighPriorityRequestSubmittedLastFinishesBeforeLowPriorityOnesSubmittedFirst) {
  // One sequence at a time on the slow model: a low-priority request runs, four more wait, then a high-priority
  // one arrives: it takes the slot (the running low one is preempted) and finishes first.
  std::vector<std::string> flags = testing::SlowModelKvFlags(64);
  flags.insert(flags.end(), {"--model=" + testing::SlowModelDir(), "--max_num_seqs=1"});
  auto server = testing::StartServerOrFail(testing::ServerBinary(), flags);
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  std::mutex mutex;
  std::vector<std::string> finished;
  std::atomic<int> first_tokens{0};
  auto run = [&](const std::string& name, int priority, int max_tokens) {
    arach::v1::GenerateRequest r;
    for (int id : {11, 12, 13, 14}) r.mutable_token_ids()->add_ids(id);
    r.set_max_tokens(max_tokens);
    r.set_ignore_eos(true);
    r.set_priority(priority);
    const grpc::Status s = client->Generate(r, [&](const arach::v1::GenerateResponse& m) { if (m.token_ids_size() > 0) ++first_tokens; });
    EXPECT_TRUE(s.ok()) << name << ": " << s.error_message();
    std::lock_guard<std::mutex> lock(mutex);
    finished.push_back(name);
  };
  std::vector<std::thread> threads;
  // low0 generates long enough to be still running when the high one comes, however slow the build (under
  // ASan on a busy 2-core machine 12 tokens were done before the four others were seen waiting).
  threads.emplace_back(run, "low0", 5, 64);
  while (first_tokens == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // low0 is running
  for (int i = 1; i <= 4; ++i) threads.emplace_back(run, absl::StrCat("low", i), 5, 12);
  ASSERT_TRUE(testing::EventuallyMetrics(*server, [](const testing::PrometheusText& m) {
    return m.Value("arach_num_requests_waiting") == 4;
  }));
  threads.emplace_back(run, "high", -5, 12);
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(finished.size(), 6u);
  EXPECT_EQ(finished.front(), "high") << "the order: " << ::testing::PrintToString(finished);
  const testing::PrometheusText metrics = testing::MetricsOrFail(*server);
  EXPECT_EQ(metrics.Sum("arach_time_to_first_token_seconds_count", {{"priority", "high"}}), 1);
  EXPECT_EQ(metrics.Sum("arach_time_to_first_token_seconds_count", {{"priority", "low"}}), 5);
  EXPECT_GE(metrics.Value("arach_preemptions_total"), 1) << "the running low-priority request gave way";
}

TEST(Hardening, CompressedRequestsAreRefusedBeforeTheyAreInflated) {
  // gRPC inflates a compressed message whole before it checks --max_request_bytes (1.5 MB of gzip took 1.5 GB of
  // the server's memory): the server accepts no compressed message; a plain one is served.
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--kv_cache_bytes=16777216"});
  ASSERT_NE(server, nullptr);
  auto stub = arach::v1::Inference::NewStub(grpc::CreateChannel(server->grpc_address(), grpc::InsecureChannelCredentials()));
  arach::v1::TokenizeRequest request;
  request.add_texts("hello");
  for (const grpc_compression_algorithm algorithm : {GRPC_COMPRESS_GZIP, GRPC_COMPRESS_DEFLATE}) {
    grpc::ClientContext context;
    context.set_compression_algorithm(algorithm);
    arach::v1::TokenizeResponse response;
    const grpc::Status status = stub->Tokenize(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << algorithm;
    EXPECT_THAT(status.error_message(), HasSubstr("is disabled")) << algorithm;
  }
  grpc::ClientContext plain;
  arach::v1::TokenizeResponse response;
  EXPECT_TRUE(stub->Tokenize(&plain, request, &response).ok());
  EXPECT_EQ(response.tokens_size(), 1);
}

TEST(Hardening, ReflectionCanBeTurnedOffAndPromptsPerRequestAreCapped) {
  for (const bool reflection : {true, false}) {
    auto server = testing::StartServerOrFail(testing::ServerBinary(),
                                             {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                              "--kv_cache_bytes=16777216", "--max_prompts_per_request=2",
                                              absl::StrCat("--grpc_reflection=", reflection ? "true" : "false")});
    ASSERT_NE(server, nullptr);
    // A reflection call: list the services (an empty request message is enough to be answered or refused).
    auto channel = grpc::CreateChannel(server->grpc_address(), grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::CompletionQueue queue;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub.PrepareCall(&context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    queue.Next(&tag, &ok);
    const char list_services[] = {0x3a, 0x00};  // field 7 (list_services): ""
    grpc::Slice slice(list_services, sizeof(list_services));
    grpc::ByteBuffer request(&slice, 1);
    call->Write(request, reinterpret_cast<void*>(2));
    queue.Next(&tag, &ok);
    call->WritesDone(reinterpret_cast<void*>(3));
    queue.Next(&tag, &ok);
    grpc::ByteBuffer reply;
    call->Read(&reply, reinterpret_cast<void*>(4));
    queue.Next(&tag, &ok);
    const bool answered = ok;
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(5));
    queue.Next(&tag, &ok);
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
    if (reflection) {
      EXPECT_TRUE(answered && status.ok()) << status.error_message();
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << "reflection is off";
    }
    json three = SmallCompletion();
    three["prompt"] = json::array({"a", "b", "c"});
    const Answer capped = Complete(*server, three, "");
    EXPECT_EQ(capped.status, 400);
    EXPECT_THAT(capped.body["error"]["message"].get<std::string>(), HasSubstr("3 prompts exceed the limit of 2"));
    EXPECT_THAT(server->Output(), HasSubstr("arach-server is OPEN"));
  }
}

}  // namespace
}  // namespace arach
