// gtest helpers for end-to-end tests of the server process: start it (a test failure when it does not
// start), scrape its /metrics, and wait for the metrics to say something.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_process.h"

namespace arach::testing {

// `binary` with `args` started and ready; null (and a test failure) when it did not start.
inline std::unique_ptr<ServerProcess> StartServerOrFail(const std::string& binary, std::vector<std::string> args) {
  auto server = ServerProcess::Start(binary, std::move(args));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

// The server's /metrics, parsed (empty, and a test failure, when it cannot be fetched).
inline PrometheusText MetricsOrFail(const ServerProcess& server) {
  auto parsed = ScrapeMetrics(server);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : PrometheusText{};
}

// Polls /metrics until `pred` holds (the engine publishes its state after each step); false after ~10 s.
inline bool EventuallyMetrics(const ServerProcess& server, const std::function<bool(const PrometheusText&)>& pred) {
  for (int i = 0; i < 400; ++i) {
    if (pred(MetricsOrFail(server))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// Whether, between `before` and `now`, exactly one more request ended cancelled and no request is left running or
// holding KV blocks: a cancelled or abandoned call's sequence left the batch and gave its blocks back.
inline bool OneMoreCancelledAndNothingHeld(const PrometheusText& now, const PrometheusText& before) {
  return now.Value("arach_num_requests_running") == 0 && now.Value("arach_kv_cache_usage_ratio") == 0 &&
         now.Sum("arach_requests_total", {{"finish_reason", "cancelled"}}) -
                 before.Sum("arach_requests_total", {{"finish_reason", "cancelled"}}) == 1;
}

}  // namespace arach::testing
