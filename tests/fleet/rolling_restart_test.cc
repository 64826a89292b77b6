// A fleet under an operator's hands: scripts/fleet.sh starts three replicas behind HAProxy, eight clients keep
// load on the proxy (four over the OpenAI HTTP API, streamed and whole; four over gRPC, streamed), and every
// replica is restarted in turn with SIGTERM while the load runs. Checks:
//  - every request that finished before the kill was answered completely (a whole answer, or a stream with
//    its last token, its usage and [DONE]; a gRPC stream with its finish): no 5xx from the proxy, no
//    UNAVAILABLE reaching a client;
//  - each replica's drain ended with "stopped (drained; ...)";
//  - a key's A/B arm is the same on every replica (they share the experiment file);
//  - a stored response is continued (previous_response_id) and read back through the proxy whichever replica
//    holds it (HAProxy routes by the replica named in its id);
//  - kill -9 of one replica under load: only requests in flight on it, or sent before the proxy's health check
//    has marked it down (2 checks 250 ms apart), may fail, each with an error that says so; every request sent
//    after that is answered (the proxy retries refused connections elsewhere);
//  - the fleet's A/B as Prometheus sees it (where prometheus is installed): a Prometheus scraping every
//    replica with deploy/prometheus/recording-rules.yml, read by `arach-cli ab --prometheus`, reports both
//    arms with latency quantiles and attention on the sink, and its request totals equal the sum of the
//    live replicas' own counters.
// Prints the figures (requests sent, answered, failed; p50 / p99 latency before, during and after the
// restarts, and after the kill). Skips without haproxy or the fixtures. ctest label: fleet.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <set>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "client/arach_client.h"
#include "client/event_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/run_command.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using testing::CommandResult;
using testing::RunCommand;

constexpr int kReplicas = 3;
constexpr int kMaxTokens = 12;

bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return free;
}

// A base port whose fleet ports (base .. base + 10 + 2 * kReplicas) are all free now.
int PickBasePort() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = 20000 + ((getpid() + attempt * 37) % 400) * 40;
    bool free = true;
    for (int port = base; port <= base + 11 + 2 * kReplicas && free; ++port) free = PortFree(port);
    if (free) return base;
  }
  return -1;
}

// One request through the proxy: when it started (seconds since the load began), how long it took, whether it
// was answered completely, and what went wrong otherwise.
struct Outcome {
  double start = 0, end = 0;
  bool ok = false;
  std::string protocol, error;
};

// A Prometheus that scrapes the replicas' /metrics every second and evaluates the recording rules every second;
// stopped with the test.
class Prometheus {
 public:
  Prometheus(const std::string& dir, int port, const std::vector<std::string>& targets) : port_(port) {
    std::ofstream config(dir + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - " << testing::SourceDir()
           << "/deploy/prometheus/recording-rules.yml\nscrape_configs:\n  - job_name: arach-server\n    static_configs:\n"
           << "      - targets: [";
    for (size_t i = 0; i < targets.size(); ++i) config << (i ? ", " : "") << '"' << targets[i] << '"';
    config << "]\n";
    config.close();
    const CommandResult started = RunCommand(absl::StrCat("prometheus --config.file=", dir, "/prometheus.yml --storage.tsdb.path=", dir,
                                                          "/tsdb --web.listen-address=127.0.0.1:", port, " > ", dir,
                                                          "/prometheus.log 2>&1 & echo $!"));
    pid_ = std::atoi(started.output.c_str());
  }
  ~Prometheus() {
    if (pid_ > 0) kill(pid_, SIGTERM);
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  // The value of an instant query with one sample, or nullopt.
  std::optional<double> Scalar(const std::string& promql) const {
    httplib::Client client(url());
    const httplib::Result result = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!result || result->status != 200) return std::nullopt;
    const json body = json::parse(result->body, nullptr, false);
    if (body.is_discarded() || body["data"]["result"].size() != 1) return std::nullopt;
    return std::stod(body["data"]["result"][0]["value"][1].get<std::string>());
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

// scripts/fleet.sh with this test's folder and ports.
class Fleet {
 public:
  Fleet(std::string dir, int base) : dir_(std::move(dir)), base_(base) {}
  CommandResult Run(const std::string& args) const {
    return RunCommand(absl::StrCat("FLEET_DIR=", dir_, " FLEET_BASE_PORT=", base_, " ARACH_SERVER=", testing::ServerBinary(),
                                   " bash ", testing::SourceDir(), "/scripts/fleet.sh ", args));
  }
  std::string grpc() const { return absl::StrCat("127.0.0.1:", base_); }
  std::string http() const { return absl::StrCat("127.0.0.1:", base_ + 1); }
  std::string replica_http(int i) const { return absl::StrCat("127.0.0.1:", base_ + 11 + 2 * i); }
  int prometheus_port() const { return base_ + 3; }
  std::string ReplicaLog(int i) const {
    std::ifstream in(absl::StrCat(dir_, "/replica-", i, ".log"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string dir_;
  int base_;
};

json CompletionBody(bool stream, const std::string& key) {
  json body = {{"model", "gpt2-tiny"}, {"prompt", "ROMEO:"}, {"max_tokens", kMaxTokens}, {"ignore_eos", true},
               {"experiment_key", key}, {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

// Whole or streamed completion through the proxy; ok only when the answer is complete.
Outcome HttpRequest(const std::string& address, bool stream, const std::string& key) {
  Outcome out;
  out.protocol = stream ? "http-stream" : "http";
  if (!stream) {
    const testing::HttpAnswer answer = testing::HttpSend(address, "POST", "/v1/completions", CompletionBody(false, key).dump());
    if (answer.status != 200) {
      out.error = absl::StrCat("HTTP ", answer.status, ": ", answer.body.dump());
    } else if (answer.body["usage"]["completion_tokens"] != kMaxTokens || answer.body["choices"][0]["finish_reason"] != "length") {
      out.error = absl::StrCat("incomplete answer: ", answer.body.dump());
    } else {
      out.ok = true;
    }
    return out;
  }
  std::vector<std::string> events;
  const client::EventStreamAnswer answer = client::PostForEvents(
      address, "/v1/completions", CompletionBody(true, key).dump(), [&](const std::string& e) { events.push_back(e); return true; }, 120);
  if (answer.status != 200) {
    out.error = absl::StrCat("HTTP ", answer.status, answer.connected ? "" : " (no answer)");
  } else if (events.size() < 2 || events.back() != "[DONE]") {
    out.error = absl::StrCat("truncated stream: ", events.size(), " events, the last ", events.empty() ? "" : events.back());
  } else {
    const json usage = json::parse(events[events.size() - 2], nullptr, false);
    if (usage.is_discarded() || !usage.contains("usage") || usage["usage"]["completion_tokens"] != kMaxTokens) {
      out.error = absl::StrCat("stream without its usage: ", events[events.size() - 2]);
    } else {
      out.ok = true;
    }
  }
  return out;
}

Outcome GrpcRequest(client::ArachClient& client, const std::string& key) {
  Outcome out;
  out.protocol = "grpc-stream";
  arach::v1::GenerateRequest request;
  request.set_text("ROMEO:");
  request.set_max_tokens(kMaxTokens);
  request.set_ignore_eos(true);
  request.set_experiment_key(key);
  int tokens = 0;
  bool finished = false;
  const grpc::Status status = client.Generate(request, [&](const arach::v1::GenerateResponse& r) {
    tokens += r.token_ids_size();
    if (r.has_finish()) finished = true;
  });
  if (!status.ok()) {
    out.error = absl::StrCat("gRPC ", status.error_code(), ": ", status.error_message());
  } else if (!finished || tokens != kMaxTokens) {
    out.error = absl::StrCat("truncated stream: ", tokens, " tokens, finish ", finished ? "seen" : "missing");
  } else {
    out.ok = true;
  }
  return out;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5))];
}

TEST(Fleet, RollingRestartLosesNothingAndKillLosesOnlyItsCallsInFlight) {
  ARACH_REQUIRE_FIXTURES();
  if (RunCommand("command -v haproxy").status != 0) GTEST_SKIP() << "haproxy not found (apt-get install haproxy)";
  const int base = PickBasePort();
  ASSERT_GT(base, 0) << "no free ports for the fleet";
  testing::ScopedTempDir dir;
  Fleet fleet(dir.path() + "/fleet", base);
  const std::string chat_template = dir.path() + "/chat.jinja";
  std::ofstream(chat_template) << "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:";
  const CommandResult up = fleet.Run(absl::StrCat("up --model ", testing::FixturesDir(), "/gpt2-tiny --replicas ", kReplicas,
                                                  " -- --max_num_seqs 16 --shadow_rate 0.25 --diagnostics_sample_rate 0.25",
                                                  " --responses_store_bytes 1048576 --chat_template ", chat_template));
  ASSERT_EQ(up.status, 0) << up.output;
  struct Down {
    const Fleet& fleet;
    ~Down() { fleet.Run("down"); }
  } down{fleet};

  std::unique_ptr<Prometheus> prometheus;
  if (RunCommand("command -v prometheus").status == 0) {
    std::vector<std::string> targets;
    for (int i = 0; i < kReplicas; ++i) targets.push_back(fleet.replica_http(i));
    prometheus = std::make_unique<Prometheus>(dir.path(), fleet.prometheus_port(), targets);
  } else {
    std::printf("[fleet] prometheus not found (apt-get install prometheus): the fleet view of the A/B is not checked\n");
  }

  // The same key gets the same arm from every replica.
  int both_arms = 0;
  for (int k = 0; k < 16; ++k) {
    const std::string key = absl::StrCat("user-", k);
    std::vector<std::string> arms;
    for (int i = 0; i < kReplicas; ++i) {
      json body = CompletionBody(false, key);
      body["max_tokens"] = 1;
      const testing::HttpAnswer answer = testing::HttpSend(fleet.replica_http(i), "POST", "/v1/completions", body.dump());
      ASSERT_EQ(answer.status, 200) << answer.body.dump();
      arms.push_back(answer.header("x-arach-experiment-arm"));
    }
    EXPECT_THAT(arms, ::testing::Each(arms[0])) << key;
    both_arms |= arms[0] == "control" ? 1 : arms[0] == "treatment" ? 2 : 0;
  }

  // Stored responses: each conversation's turns, continued through the proxy with previous_response_id, reach the
  // replica that stored the turn before (named in its id), as do the routes that read a response and the count of a
  // continuing turn's input tokens.
  std::set<std::string> holders;
  for (int conversation = 0; conversation < kReplicas; ++conversation) {
    std::string previous;
    for (int turn = 0; turn < 4; ++turn) {
      json body = {{"model", "gpt2-tiny"}, {"input", absl::StrCat("turn ", turn)}, {"max_output_tokens", 2}};
      if (!previous.empty()) body["previous_response_id"] = previous;
      const testing::HttpAnswer answer = testing::HttpSend(fleet.http(), "POST", "/v1/responses", body.dump());
      ASSERT_EQ(answer.status, 200) << "conversation " << conversation << " turn " << turn << ": " << answer.body.dump();
      const std::string id = answer.body["id"].get<std::string>();
      const std::vector<std::string> parts = absl::StrSplit(id, '_');
      ASSERT_GE(parts.size(), 3u) << id;
      EXPECT_EQ(parts[0], "resp") << id;
      if (turn > 0) {
        EXPECT_TRUE(absl::StartsWith(previous, absl::StrCat("resp_", parts[1], "_"))) << previous << " then " << id;
      }
      holders.insert(parts[1]);
      const testing::HttpAnswer stored = testing::HttpSend(fleet.http(), "GET", "/v1/responses/" + id + "/input_items", "");
      EXPECT_EQ(stored.status, 200) << id << ": " << stored.body.dump();
      const json count = {{"model", "gpt2-tiny"}, {"input", "next"}, {"previous_response_id", id}};
      const testing::HttpAnswer counted = testing::HttpSend(fleet.http(), "POST", "/v1/responses/input_tokens", count.dump());
      EXPECT_EQ(counted.status, 200) << "its input tokens are counted where it is held: " << counted.body.dump();
      previous = id;
    }
  }
  std::printf("[fleet] stored responses: %d conversations of 4 turns held by %zu replica(s), every turn continued\n", kReplicas,
              holders.size());
  EXPECT_EQ(both_arms, 3) << "16 keys should reach both arms of the 50/50 experiment";

  // Load: 8 clients through the proxy until told to stop.
  const Clock::time_point t0 = Clock::now();
  auto seconds_since_start = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<Outcome> outcomes;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      std::unique_ptr<client::ArachClient> grpc = c >= 4 ? client::ArachClient::Connect(fleet.grpc()) : nullptr;
      for (int n = 0; !stop; ++n) {
        const std::string key = absl::StrCat("client-", c, "-", n);
        const double start = seconds_since_start();
        Outcome outcome = c < 4 ? HttpRequest(fleet.http(), c % 2 == 0, key) : GrpcRequest(*grpc, key);
        outcome.start = start;
        outcome.end = seconds_since_start();
        std::lock_guard<std::mutex> lock(mutex);
        outcomes.push_back(std::move(outcome));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double restarts_begin = seconds_since_start();
  for (int i = 0; i < kReplicas; ++i) {
    const CommandResult restarted = fleet.Run(absl::StrCat("restart ", i));
    EXPECT_EQ(restarted.status, 0) << restarted.output;
    std::printf("%s", restarted.output.c_str());
  }
  const double restarts_end = seconds_since_start();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double kill_time = seconds_since_start();
  const CommandResult killed = fleet.Run("kill 0");
  EXPECT_EQ(killed.status, 0) << killed.output;
  const double killed_time = seconds_since_start();  // replica 0 is gone (fleet.sh kill waits for it)
  std::this_thread::sleep_for(std::chrono::seconds(3));
  stop = true;
  for (std::thread& t : clients) t.join();

  // Figures per phase, and the checks.
  struct Phase {
    const char* name;
    double from, to;  // by start time
  };
  const Phase phases[] = {{"before the restarts", 0, restarts_begin},
                          {"during the restarts", restarts_begin, restarts_end},
                          {"after the restarts", restarts_end, kill_time},
                          {"after kill -9 of one", kill_time, 1e9}};
  for (const Phase& phase : phases) {
    std::vector<double> latencies;
    int sent = 0, answered = 0;
    for (const Outcome& o : outcomes) {
      if (o.start < phase.from || o.start >= phase.to) continue;
      ++sent;
      if (o.ok) {
        ++answered;
        latencies.push_back(o.end - o.start);
      }
    }
    std::printf("[fleet] %-21s sent %4d answered %4d failed %3d  latency p50 %6.1f ms p99 %6.1f ms\n", phase.name, sent, answered,
                sent - answered, 1000 * Percentile(latencies, 0.5), 1000 * Percentile(latencies, 0.99));
  }
  // Finished before the kill: all answered. Running while it happened, or sent before HAProxy's health check
  // could mark the replica down (kProxyNoticesWithin; one such request in ~300 was seen to get a 502): may fail,
  // saying why. Sent after that: all answered.
  constexpr double kProxyNoticesWithin = 0.6;  // s: fall 2 x inter 250 ms, and a margin
  int in_flight_at_kill = 0, failed_at_kill = 0, before_kill = 0, before_noticed = 0, failed_before_noticed = 0;
  for (const Outcome& o : outcomes) {
    if (o.end < kill_time) {
      ++before_kill;
      EXPECT_TRUE(o.ok) << o.protocol << " request at " << o.start << " s: " << o.error;
    } else if (o.start < killed_time) {
      ++in_flight_at_kill;
      if (!o.ok) {
        ++failed_at_kill;
        EXPECT_FALSE(o.error.empty());
        std::printf("[fleet] in flight at the kill: %s failed: %s\n", o.protocol.c_str(), o.error.c_str());
      }
    } else if (o.start < killed_time + kProxyNoticesWithin) {
      ++before_noticed;
      if (!o.ok) {
        ++failed_before_noticed;
        EXPECT_FALSE(o.error.empty());
        std::printf("[fleet] sent %.3f s after the kill, before the proxy noticed: %s failed: %s\n", o.start - killed_time,
                    o.protocol.c_str(), o.error.c_str());
      }
    } else {
      EXPECT_TRUE(o.ok) << o.protocol << " request sent " << o.start - killed_time << " s after the kill: " << o.error;
    }
  }
  std::printf("[fleet] %d requests sent in the %.1f s before the proxy could notice the kill, %d of them failed\n", before_noticed,
              kProxyNoticesWithin, failed_before_noticed);
  std::printf("[fleet] %d requests finished before the kill; %d in flight at the kill, %d of them failed\n", before_kill,
              in_flight_at_kill, failed_at_kill);
  EXPECT_GT(before_kill, 40) << "the load should keep the fleet busy";
  for (int i = 0; i < kReplicas; ++i) {
    const std::string log = fleet.ReplicaLog(i);
    size_t drains = 0;
    for (size_t at = log.find("arach-server stopped (drained;"); at != std::string::npos;
         at = log.find("arach-server stopped (drained;", at + 1)) {
      ++drains;
    }
    EXPECT_EQ(drains, 1u) << "replica " << i << " should have drained once within its grace period:\n" << log;
  }

  // The fleet's A/B from Prometheus: both arms, aggregated over every replica it scrapes.
  if (prometheus == nullptr) return;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // a last scrape and rule evaluation after the load
  double live_total = 0;
  for (int i = 1; i < kReplicas; ++i) {  // replica 0 was killed: Prometheus marks its series stale
    const absl::StatusOr<std::string> text = testing::HttpGetMetrics(fleet.replica_http(i));
    ASSERT_TRUE(text.ok()) << text.status();
    const absl::StatusOr<testing::PrometheusText> metrics = testing::ParsePrometheusText(*text);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    live_total += metrics->Sum("arach_requests_total");
  }
  EXPECT_EQ(prometheus->Scalar("sum(arach_requests_total)"), live_total) << "Prometheus should see every live replica";
  const std::string report_file = dir.File("ab.json");
  const CommandResult ab = RunCommand(absl::StrCat(testing::CliBinary(), " ab --prometheus ", prometheus->url(), " --json_out ", report_file));
  std::printf("%s", ab.output.c_str());
  ASSERT_EQ(ab.status, 0) << ab.output;
  std::ifstream in(report_file);
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded());
  for (const char* variant : {"base", "arach"}) {
    ASSERT_TRUE(report["variants"].contains(variant)) << report.dump();
    const json& v = report["variants"][variant];
    EXPECT_GT(v.value("requests_per_second", 0.0), 0) << variant;
    EXPECT_GT(v.value("ttft_p50_s", 0.0), 0) << variant;
    EXPECT_GE(v.value("ttft_p99_s", 0.0), v.value("ttft_p50_s", 0.0)) << variant;
    EXPECT_GT(v.value("output_tokens_per_second", 0.0), 0) << variant;
    EXPECT_TRUE(v.contains("attention_sink_mass")) << variant << ": diagnosed requests should report the sink's share";
  }
  EXPECT_NEAR(report["variants"]["base"].value("share", 0.0) + report["variants"]["arach"].value("share", 0.0), 1.0, 1e-6);
}

}  // namespace
}  // namespace arach
