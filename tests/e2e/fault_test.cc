// Faults against the real server process (the slow model of test_models.h, ~20 ms per step): clients
// that disconnect mid-stream, deadlines that expire in the queue and mid-generation, a flood past the
// queue limit, KV exhaustion with preemption, SIGTERM under load and a slow reader. Each test is bounded
// in time and count and asserts that nothing accepted was lost and that memory and KV blocks return to
// their baseline. Each prints one "[fault]" line with its figures.
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/arach_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using client::ArachClient;
using testing::ServerProcess;

std::unique_ptr<ServerProcess> StartSlowServer(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--model=" + testing::SlowModelDir(),
                                   "--adapter=" + testing::SlowModelDir() + "/preproj.safetensors"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = ServerProcess::Start(testing::ServerBinary(), args);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

// An empty set where the scrape fails (checks on its values then fail).
testing::PrometheusText Metrics(const ServerProcess& server) {
  auto parsed = testing::ScrapeMetrics(server);
  return parsed.ok() ? *parsed : testing::PrometheusText{};
}

// Waits for the engine to be idle and returns the metrics then.
testing::PrometheusText Idle(const ServerProcess& server) {
  testing::PrometheusText m;
  for (int i = 0; i < 400; ++i) {
    m = Metrics(server);
    if (m.Value("arach_num_requests_running") == 0 && m.Value("arach_num_requests_waiting") == 0 &&
        m.Value("arach_kv_cache_usage_ratio") == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return m;
}

arach::v1::GenerateRequest Request(int max_tokens, int seed, const char* variant = "") {
  arach::v1::GenerateRequest r;
  for (int i = 0; i < 16; ++i) r.mutable_token_ids()->add_ids(1000 + (seed * 131 + i * 17) % 40000);
  r.set_max_tokens(max_tokens);
  r.set_ignore_eos(true);
  r.mutable_sampling()->set_temperature(0.0f);
  const std::string v = variant;
  if (!v.empty()) {
    r.mutable_variant()->set_arach(v.find("arach") != std::string::npos);
    r.mutable_variant()->set_skip(v.find("skip") != std::string::npos);
  }
  return r;
}

const char* kVariants[] = {"base", "arach", "skip", "arach+skip"};

struct Tally {
  std::mutex mutex;
  std::map<grpc::StatusCode, int> codes;
  void Add(grpc::StatusCode code) {
    std::lock_guard<std::mutex> lock(mutex);
    ++codes[code];
  }
  int operator[](grpc::StatusCode code) {
    std::lock_guard<std::mutex> lock(mutex);
    return codes[code];
  }
};

void Report(const char* test, int sent, Tally& t, long rss_before, long rss_peak, long rss_after, double kv_before, double kv_after) {
  std::printf("[fault] %s: sent=%d completed=%d cancelled=%d deadline=%d refused=%d unavailable=%d rss_kib before=%ld peak=%ld "
              "after=%ld kv_usage before=%.3f after=%.3f\n",
              test, sent, t[grpc::StatusCode::OK], t[grpc::StatusCode::CANCELLED], t[grpc::StatusCode::DEADLINE_EXCEEDED],
              t[grpc::StatusCode::RESOURCE_EXHAUSTED], t[grpc::StatusCode::UNAVAILABLE], rss_before, rss_peak, rss_after, kv_before,
              kv_after);
  std::fflush(stdout);
}

// Memory may not fall back exactly (allocator caches): allow 64 MiB over the warmed-up baseline. Under
// AddressSanitizer (ARACH_SERVER_UNDER_ASAN: the ASan stage builds the server instrumented, this test not) freed
// blocks wait in its quarantine, 256 MiB by default, before they are reused, so RSS climbs by up to that much without
// a leak; LeakSanitizer checks for leaks there when the server exits.
#if defined(ARACH_SERVER_UNDER_ASAN)
constexpr long kAllocatorSlackKib = (64 + 256) * 1024;
#else
constexpr long kAllocatorSlackKib = 64 * 1024;
#endif

void ExpectNoMemoryGrowth(long rss_before, long rss_after) {
  EXPECT_LT(rss_after, rss_before + kAllocatorSlackKib) << "resident KiB before " << rss_before << ", after " << rss_after;
}

class Warm : public ::testing::Test {
 protected:
  // Runs a few requests of every variant so that workspaces and caches reach their steady size.
  static long WarmUp(const ServerProcess& server, ArachClient& client) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] { (void)client.Generate(Request(16, 100 + i, kVariants[i % 4]), [](const auto&) {}); });
    }
    for (auto& t : threads) t.join();
    Idle(server);
    return server.RssKib();
  }
};

TEST_F(Warm, ClientsDisconnectingMidStreamLoseNothing) {
  auto server = StartSlowServer({"--kv_cache_bytes=268435456", "--max_num_seqs=8"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  const long rss_before = WarmUp(*server, *client);
  const testing::PrometheusText before = Metrics(*server);
  constexpr int kClients = 16;
  Tally tally;
  std::atomic<long> rss_peak{rss_before};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(i);
      const int cancel_after = i % 2 == 0 ? 1 + static_cast<int>(rng() % 12) : 1 << 30;  // half of them leave
      grpc::ClientContext context;
      int tokens = 0;
      const grpc::Status s = client->Generate(Request(24, i, kVariants[i % 4]), [&](const arach::v1::GenerateResponse& r) {
        tokens += r.token_ids_size();
        if (tokens >= cancel_after) context.TryCancel();
      }, std::nullopt, &context);
      tally.Add(s.error_code());
      rss_peak = std::max<long>(rss_peak, server->RssKib());
    });
  }
  for (auto& t : threads) t.join();
  const testing::PrometheusText after = Idle(*server);
  const long rss_after = server->RssKib();
  Report("disconnects", kClients, tally, rss_before, rss_peak, rss_after, before.Value("arach_kv_cache_usage_ratio"),
         after.Value("arach_kv_cache_usage_ratio"));
  EXPECT_EQ(tally[grpc::StatusCode::OK] + tally[grpc::StatusCode::CANCELLED], kClients);
  EXPECT_GE(tally[grpc::StatusCode::OK], kClients / 2) << "the clients that stayed all finish";
  const double finished = after.Sum("arach_requests_total") - before.Sum("arach_requests_total");
  EXPECT_EQ(finished, kClients) << "every request ended exactly once in the engine";
  EXPECT_EQ(after.Value("arach_kv_cache_usage_ratio"), 0);
  ExpectNoMemoryGrowth(rss_before, rss_after);
}

TEST_F(Warm, DeadlinesExpireInTheQueueAndMidGeneration) {
  auto server = StartSlowServer({"--kv_cache_bytes=268435456", "--max_num_seqs=1"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  const long rss_before = WarmUp(*server, *client);
  Tally tally;
  // The first request holds the one sequence slot well past the queued ones' 300 ms deadline on any machine: 30
  // tokens of the 124M model took ~190 ms on an idle 2-core machine, so a queued request was admitted and finished.
  std::thread first([&] { tally.Add(client->Generate(Request(300, 1), [](const auto&) {}).error_code()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<std::thread> queued;
  for (int i = 0; i < 4; ++i) {  // queued behind the first: their deadline passes before admission
    queued.emplace_back([&, i] {
      tally.Add(client->Generate(Request(30, 10 + i), [](const auto&) {}, std::chrono::system_clock::now() + std::chrono::milliseconds(300))
                    .error_code());
    });
  }
  for (auto& t : queued) t.join();
  first.join();
  // Alone, but the deadline falls mid-generation: 1000 tokens take ~6 s on an idle 2-core machine (~6 ms each), so
  // 1.5 s cuts them on machines several times faster too, and the first tokens come long before it even under ASan.
  int tokens = 0;
  const grpc::Status mid = client->Generate(Request(1000, 20), [&](const auto& r) { tokens += r.token_ids_size(); },
                                            std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
  tally.Add(mid.error_code());
  const testing::PrometheusText after = Idle(*server);
  Report("deadlines", 6, tally, rss_before, rss_before, server->RssKib(), 0, after.Value("arach_kv_cache_usage_ratio"));
  EXPECT_EQ(tally[grpc::StatusCode::OK], 1);
  EXPECT_EQ(tally[grpc::StatusCode::DEADLINE_EXCEEDED], 5);
  EXPECT_GT(tokens, 0) << "the last request was cut mid-generation, not before it started";
  EXPECT_LT(tokens, 1000);
  EXPECT_EQ(after.Value("arach_kv_cache_usage_ratio"), 0);
}

TEST_F(Warm, FloodPastTheQueueLimitIsRefusedWithoutMemoryGrowth) {
  auto server = StartSlowServer({"--kv_cache_bytes=268435456", "--max_num_seqs=2", "--max_queued_requests=4"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  const long rss_before = WarmUp(*server, *client);
  const testing::PrometheusText before = Metrics(*server);
  constexpr int kFlood = 120;
  Tally tally;
  std::atomic<long> rss_peak{rss_before};
  std::vector<std::thread> threads;
  for (int i = 0; i < kFlood; ++i) {
    threads.emplace_back([&, i] {
      tally.Add(client->Generate(Request(8, i, kVariants[i % 4]), [](const auto&) {}).error_code());
      rss_peak = std::max<long>(rss_peak, server->RssKib());
    });
  }
  for (auto& t : threads) t.join();
  const testing::PrometheusText after = Idle(*server);
  const long rss_after = server->RssKib();
  Report("flood", kFlood, tally, rss_before, rss_peak, rss_after, 0, after.Value("arach_kv_cache_usage_ratio"));
  EXPECT_EQ(tally[grpc::StatusCode::OK] + tally[grpc::StatusCode::RESOURCE_EXHAUSTED], kFlood) << "nothing else may happen";
  EXPECT_GT(tally[grpc::StatusCode::RESOURCE_EXHAUSTED], kFlood / 2);
  EXPECT_EQ(after.Sum("arach_requests_total", {{"finish_reason", "length"}}) -
                before.Sum("arach_requests_total", {{"finish_reason", "length"}}),
            tally[grpc::StatusCode::OK])
      << "every accepted request completed";
  EXPECT_EQ(after.Sum("arach_requests_rejected_total", {{"code", "resource_exhausted"}}) -
                before.Sum("arach_requests_rejected_total", {{"code", "resource_exhausted"}}),
            tally[grpc::StatusCode::RESOURCE_EXHAUSTED]);
  ExpectNoMemoryGrowth(rss_before, rss_after);
}

TEST_F(Warm, KvExhaustionPreemptsAndRecomputesWithoutChangingOutputs) {
  // 16 blocks of 16 tokens: six 64-token sequences need 24.
  std::vector<std::string> flags = testing::SlowModelKvFlags(16);
  flags.push_back("--max_num_seqs=6");
  auto server = StartSlowServer(flags);
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  constexpr int kRequests = 6;
  std::vector<std::vector<int32_t>> alone(kRequests), together(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const grpc::Status status = client->Generate(Request(48, i, kVariants[i % 4]), [&](const arach::v1::GenerateResponse& r) {
      alone[i].insert(alone[i].end(), r.token_ids().begin(), r.token_ids().end());
    });
    ASSERT_TRUE(status.ok()) << "request " << i << ": " << status.error_code() << " " << status.error_message();
  }
  const testing::PrometheusText before = Idle(*server);
  const long rss_before = server->RssKib();
  Tally tally;
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      tally.Add(client->Generate(Request(48, i, kVariants[i % 4]), [&](const arach::v1::GenerateResponse& r) {
        together[i].insert(together[i].end(), r.token_ids().begin(), r.token_ids().end());
      }).error_code());
    });
  }
  for (auto& t : threads) t.join();
  const testing::PrometheusText after = Idle(*server);
  Report("kv-exhaustion", kRequests, tally, rss_before, rss_before, server->RssKib(), before.Value("arach_kv_cache_usage_ratio"),
         after.Value("arach_kv_cache_usage_ratio"));
  EXPECT_EQ(tally[grpc::StatusCode::OK], kRequests);
  EXPECT_GT(after.Value("arach_preemptions_total") - before.Value("arach_preemptions_total"), 0) << "the pool was meant to run out";
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(together[i], alone[i]) << "request " << i << " changed under preemption";
  EXPECT_EQ(after.Value("arach_kv_cache_usage_ratio"), 0);
}

TEST_F(Warm, SigtermUnderLoadLosesNoAcceptedRequest) {
  auto server = StartSlowServer({"--kv_cache_bytes=268435456", "--max_num_seqs=4", "--drain_grace_seconds=120"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  constexpr int kRequests = 8;
  Tally tally;
  std::atomic<int> started{0};
  std::vector<int> tokens(kRequests, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      tally.Add(client->Generate(Request(24, i, kVariants[i % 4]), [&](const arach::v1::GenerateResponse& r) {
        if (tokens[i] == 0) ++started;
        tokens[i] += r.token_ids_size();
      }).error_code());
    });
  }
  while (started < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server->Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int late_tokens = 0;
  const grpc::Status late = client->Generate(Request(4, 99), [&](const arach::v1::GenerateResponse& r) { late_tokens += r.token_ids_size(); });
  for (auto& t : threads) t.join();
  auto code = server->Wait(std::chrono::seconds(150));
  Report("sigterm", kRequests + 1, tally, 0, 0, 0, 0, 0);
  // Refused: our handler answers UNAVAILABLE once draining; a call gRPC had taken in but not yet handed to a handler
  // when its shutdown began is cancelled by gRPC itself (seen once under ASan on a loaded machine). Either way it
  // never ran.
  EXPECT_TRUE(late.error_code() == grpc::StatusCode::UNAVAILABLE || late.error_code() == grpc::StatusCode::CANCELLED)
      << late.error_code() << " " << late.error_message();
  EXPECT_EQ(late_tokens, 0);
  EXPECT_EQ(tally[grpc::StatusCode::OK], kRequests) << "every request accepted before SIGTERM completes";
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(tokens[i], 24) << i;
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST_F(Warm, ASlowReaderDoesNotHoldBackOtherClients) {
  auto server = StartSlowServer({"--kv_cache_bytes=268435456", "--max_num_seqs=8"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  const long rss_before = WarmUp(*server, *client);
  Tally tally;
  auto timed = [&](int seed) {
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status s = client->Generate(Request(24, seed), [](const auto&) {});
    tally.Add(s.error_code());
    EXPECT_TRUE(s.ok());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double baseline = timed(1);
  int slow_tokens = 0;
  auto slow_client = ArachClient::Connect(server->grpc_address());  // its own connection
  std::thread slow([&] {
    (void)slow_client->Generate(Request(60, 2), [&](const arach::v1::GenerateResponse& r) {
      slow_tokens += r.token_ids_size();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // reads far slower than tokens are made
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double with_slow_reader = timed(3);
  slow.join();
  const testing::PrometheusText after = Idle(*server);
  Report("slow-reader", 3, tally, rss_before, rss_before, server->RssKib(), 0, after.Value("arach_kv_cache_usage_ratio"));
  std::printf("[fault] slow-reader: other client %.2f s alone, %.2f s beside the slow reader\n", baseline, with_slow_reader);
  EXPECT_EQ(slow_tokens, 60) << "the slow reader still gets everything";
  EXPECT_LT(with_slow_reader, 2.5 * baseline + 0.5) << "the engine must not wait for a slow reader";
}

}  // namespace
}  // namespace arach
