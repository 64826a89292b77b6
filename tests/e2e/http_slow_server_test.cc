// End-to-end over HTTP on a make-model GPT-2-124M server (slow enough on CPU to act mid-stream; the sanitizer
// builds' is smaller): a step past the stall timeout fails liveness while it lasts; a whole answer ends when its
// client stops waiting; a flood past the queue gets 429s and nothing else; a client that goes away mid-stream or
// before its whole answer frees its sequence; SIGTERM during a stream lets it finish while new requests get 503;
// probes on the metrics listener are answered while streams hold every API connection.
#include <httplib.h>

#include <atomic>
#include <csignal>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/http_completion.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::Complete;
using testing::EventuallyMetrics;
using testing::HttpAnswer;
using testing::Send;
using testing::ServerProcess;
using testing::Stream;
using testing::StreamResult;

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args) {
  return testing::StartServerOrFail(testing::ServerBinary(), std::move(args));
}
testing::PrometheusText Metrics(const ServerProcess& server) { return testing::MetricsOrFail(server); }

json LongBody(int max_tokens, bool stream) {
  json ids = json::array();
  for (int i = 0; i < 16; ++i) ids.push_back(1000 + i);
  return {{"model", "slow:base"}, {"prompt", ids},        {"max_tokens", max_tokens},
          {"temperature", 0},     {"ignore_eos", true},   {"stream", stream}};
}

// The prompt and completion tokens the request log gives the first call that ended with `status` (waiting up to
// ~2 s for its line); none when no call did.
struct LoggedTokens {
  int prompt = 0;
  int completion = 0;
};
std::optional<LoggedTokens> LoggedCall(ServerProcess& server, int status) {
  const std::regex line(" api=http route=\\S+ key=\\S+ variant=\\S+ status=" + std::to_string(status) +
                        " prompt_tokens=(\\d+) completion_tokens=(\\d+)");
  for (int i = 0; i < 100; ++i) {
    const std::string output = server.Output();
    if (std::smatch match; std::regex_search(output, match, line)) return LoggedTokens{std::stoi(match[1]), std::stoi(match[2])};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// A step that runs past --engine_stall_seconds (here a 1000-token prefill of the slow model against 50 ms) makes the
// engine unhealthy while it lasts: /live and /ready answer 503 saying why; once the step ends both are 200 again.
TEST(HttpSlowServer, AStalledStepFailsLivenessUntilItEnds) {
  if (!testing::SlowModelIsFullSize()) GTEST_SKIP() << "the sanitizer builds' slow model is too fast for a step to stall";
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=268435456",
                             "--max_num_batched_tokens=1024", "--engine_stall_seconds=0.05"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Send(*server, "GET", "/live").status, 200);
  EXPECT_EQ(Send(*server, "GET", "/live").body, json({{"status", "alive"}}));
  json body = LongBody(1, false);
  body["prompt"] = json::array();
  for (int i = 0; i < 1000; ++i) body["prompt"].push_back(1000 + i);
  std::atomic<bool> done{false};
  HttpAnswer answer;
  std::thread request([&] {
    answer = Complete(*server, body);
    done = true;
  });
  HttpAnswer live;  // the first 503 of each probe
  bool ready_refused = false;
  while (!done && (live.status != 503 || !ready_refused)) {
    if (live.status != 503) live = Send(*server, "GET", "/live");
    ready_refused = ready_refused || Send(*server, "GET", "/ready").status == 503;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  request.join();
  EXPECT_EQ(answer.status, 200) << answer.body;
  ASSERT_EQ(live.status, 503) << "the step never showed as stalled";
  EXPECT_EQ(live.body["status"], "unhealthy");
  EXPECT_THAT(live.body["reason"].get<std::string>(), ::testing::HasSubstr("stall timeout 50 ms"));
  EXPECT_TRUE(ready_refused);
  // The answer reaches the client from inside the step, a moment before the step thread ends its round: wait for it.
  const auto round_over_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int live_after = Send(*server, "GET", "/live").status;
  while (live_after != 200 && std::chrono::steady_clock::now() < round_over_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    live_after = Send(*server, "GET", "/live").status;
  }
  EXPECT_EQ(live_after, 200) << "healthy once the step ended";
  EXPECT_EQ(Send(*server, "GET", "/ready").status, 200);
}

// A whole answer ends when its client stops waiting, as OpenAI's clients say in x-stainless-timeout /
// x-stainless-read-timeout: 504 (finish reason deadline) instead of computing on for nobody; a stream, whose first
// bytes come at once, runs on; a header that is not a number is no wait.
TEST(HttpSlowServer, AWholeAnswerEndsWhenItsClientStopsWaiting) {
  if (!testing::SlowModelIsFullSize()) GTEST_SKIP() << "the sanitizer builds' slow model answers within the wait";
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=268435456"});
  ASSERT_NE(server, nullptr);
  const auto start = std::chrono::steady_clock::now();
  const HttpAnswer abandoned = Complete(*server, LongBody(900, false), {{"x-stainless-timeout", "1"}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(abandoned.status, 504) << abandoned.body;
  EXPECT_LT(seconds, 30.0);
  const HttpAnswer python = Complete(*server, LongBody(900, false), {{"x-stainless-read-timeout", "1.5"}});
  EXPECT_EQ(python.status, 504) << python.body;

  json streamed = LongBody(300, true);
  streamed["stream_options"] = {{"include_usage", true}};
  const HttpAnswer stream = Complete(*server, streamed, {{"x-stainless-timeout", "1"}});
  EXPECT_EQ(stream.status, 200);
  ASSERT_TRUE(stream.body.is_string());
  EXPECT_THAT(stream.body.get<std::string>(), ::testing::HasSubstr("\"completion_tokens\":300")) << "a stream is not cut";
  EXPECT_EQ(Complete(*server, LongBody(2, false), {{"x-stainless-timeout", "soon"}}).status, 200);

  const testing::PrometheusText metrics = testing::MetricsOrFail(*server);
  EXPECT_EQ(metrics.Sum("arach_requests_total", {{"finish_reason", "deadline"}}), 2);
}

TEST(HttpSlowServer, FloodGetsTooManyRequestsAndNothingElse) {
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=268435456",
                             "--max_num_seqs=1", "--max_queued_requests=1"});
  ASSERT_NE(server, nullptr);
  std::vector<HttpAnswer> answers(6);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) threads.emplace_back([&, i] { answers[i] = Complete(*server, LongBody(20, false)); });
  for (std::thread& t : threads) t.join();
  int ok = 0, limited = 0;
  for (const HttpAnswer& a : answers) {
    if (a.status == 200) ++ok;
    if (a.status == 429) {
      ++limited;
      EXPECT_EQ(a.header("Retry-After"), "1");
      EXPECT_EQ(a.body["error"]["type"], "rate_limit_error");
    }
  }
  EXPECT_EQ(ok + limited, 6) << "only 200s and 429s";
  EXPECT_GE(limited, 3);
  EXPECT_GE(ok, 1);
}

TEST(HttpSlowServer, ClientGoneMidStreamFreesItsSequence) {
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=268435456"});
  ASSERT_NE(server, nullptr);
  const testing::PrometheusText before = Metrics(*server);
  int events = 0;
  const StreamResult stream = Stream(*server, LongBody(800, true), [&](const std::string&) { return ++events < 3; });
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(events, 3);
  EXPECT_TRUE(EventuallyMetrics(*server, [&](const testing::PrometheusText& m) {
    return testing::OneMoreCancelledAndNothingHeld(m, before);
  })) << "the abandoned sequence must leave the batch and give back its blocks";
  const std::optional<LoggedTokens> logged = LoggedCall(*server, 499);
  ASSERT_TRUE(logged.has_value()) << server->Output();
  EXPECT_GE(logged->completion, 2) << "the tokens streamed before the client left count";
}

// A client that hangs up before its whole (non-streamed) answer has come frees its sequence too, without saying how
// long it waits: the handler sees the connection closed (ClientConnection), cancels the choices and logs a 499.
TEST(HttpSlowServer, ClientGoneBeforeItsWholeAnswerFreesItsSequence) {
  if (!testing::SlowModelIsFullSize()) GTEST_SKIP() << "the sanitizer builds' slow model answers before the client leaves";
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=268435456"});
  ASSERT_NE(server, nullptr);
  const testing::PrometheusText before = Metrics(*server);
  {
    httplib::Client impatient("http://" + server->http_address());
    impatient.set_read_timeout(1, 0);
    const httplib::Result result = impatient.Post("/v1/completions", LongBody(800, false).dump(), "application/json");
    ASSERT_FALSE(result) << "answered within a second: " << result->status;
  }  // the client's socket closes here
  EXPECT_TRUE(EventuallyMetrics(*server, [&](const testing::PrometheusText& m) {
    return testing::OneMoreCancelledAndNothingHeld(m, before) &&
           m.Sum("arach_http_requests_total", {{"status", "499"}}) - before.Sum("arach_http_requests_total", {{"status", "499"}}) == 1;
  })) << "the abandoned sequence must leave the batch and give back its blocks";
  const std::optional<LoggedTokens> logged = LoggedCall(*server, 499);
  ASSERT_TRUE(logged.has_value()) << server->Output();
  EXPECT_EQ(logged->prompt, 16);
  EXPECT_GT(logged->completion, 0) << "what was computed counts (the log, the key's token budget)";
  EXPECT_EQ(Complete(*server, LongBody(2, false)).status, 200) << "the server answers the next call";
}

TEST(HttpSlowServer, SigtermDuringAStreamLetsItFinish) {
  constexpr int kStreamTokens = 150;  // outlasts the 1 s announcement and the checks after it, loaded machine included
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=134217728",
                             "--drain_grace_seconds=600", "--drain_announce_ms=1000"});
  ASSERT_NE(server, nullptr);
  std::atomic<int> events{0};
  StreamResult stream;
  json body = LongBody(kStreamTokens, true);
  body["stream_options"] = {{"include_usage", true}};
  std::thread reader([&] { stream = Stream(*server, body, [&](const std::string&) { ++events; return true; }); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (events < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(events.load(), 2);
  server->Signal(SIGTERM);
  int health = 0;
  for (int i = 0; i < 200 && health != 503; ++i) {
    health = Send(*server, "GET", "/health").status;
    if (health != 503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(health, 503) << "draining";
  // A lame duck for --drain_announce_ms: not ready, but a call that still arrives is served.
  EXPECT_EQ(Send(*server, "GET", "/ready").status, 503);
  const HttpAnswer served = Complete(*server, LongBody(1, false));
  EXPECT_EQ(served.status, 200) << served.body;
  HttpAnswer refused;
  const auto refused_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    refused = Complete(*server, LongBody(1, false));
  } while (refused.status == 200 && std::chrono::steady_clock::now() < refused_deadline);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_LT(events.load(), kStreamTokens) << "the stream should still be running during the drain";
  reader.join();
  ASSERT_GE(stream.events.size(), 2u);
  EXPECT_EQ(stream.events.back(), "[DONE]");
  EXPECT_EQ(json::parse(stream.events[stream.events.size() - 2])["usage"]["completion_tokens"], kStreamTokens);
  auto exit_code = server->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0);
}

TEST(HttpSlowServer, ProbesOnTheMetricsListenerAreAnsweredWhileStreamsHoldEveryApiConnection) {
  // Every API connection held by a stream: a probe on the API port would wait for one of them to end; on the
  // --metrics_listen address (its own threads) /ready, /health and /metrics are answered at once.
  constexpr int kApiThreads = 2;
  auto server = StartServer({"--model=" + testing::SlowModelDir(), "--served_model_name=slow", "--kv_cache_bytes=134217728",
                             "--http_threads=" + std::to_string(kApiThreads), "--metrics_listen=127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->metrics_address(), server->http_address());
  std::atomic<int> streaming{0};
  std::atomic<bool> hang_up{false};
  std::vector<std::thread> streams;
  struct HangUpAndJoin {  // also when an assertion below ends the test early (a joinable thread would terminate it)
    std::atomic<bool>& hang_up;
    std::vector<std::thread>& streams;
    ~HangUpAndJoin() {
      hang_up = true;
      for (std::thread& t : streams) t.join();
    }
  } hang_up_at_end{hang_up, streams};
  for (int i = 0; i < kApiThreads; ++i) {
    streams.emplace_back([&] {
      bool counted = false;
      Stream(*server, LongBody(800, true), [&](const std::string&) {
        if (!counted) ++streaming;
        counted = true;
        return !hang_up.load();
      });
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (streaming < kApiThreads && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(streaming.load(), kApiThreads);
  for (const char* path : {"/ready", "/health", "/metrics"}) {
    const auto start = std::chrono::steady_clock::now();
    const HttpAnswer answer = testing::HttpSend(server->metrics_address(), "GET", path);
    EXPECT_EQ(answer.status, 200) << path;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << path;
  }
  EXPECT_EQ(testing::HttpSend(server->metrics_address(), "GET", "/ready").body["status"], "serving");
  EXPECT_EQ(testing::HttpSend(server->metrics_address(), "POST", "/v1/completions", LongBody(1, false).dump()).status, 404)
      << "the API itself is not on the metrics listener";
}

}  // namespace
}  // namespace arach
