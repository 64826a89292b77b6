// A test suite whose tests share one arach-server on the gpt2-tiny fixture (32 MiB of KV cache) plus the
// suite's own flags, started once for the suite; each test gets a connected gRPC client. Derive as
//   class MySuite : public testing::SharedFixtureServer<MySuite> {
//    public: static std::vector<std::string> ExtraFlags() { return {"--shadow_rate=1"}; }
//   };
// Starts testing::ServerBinary() (build_paths.h); without ../shared/fixtures the tests skip.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/arach_client.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"

namespace arach::testing {

template <typename Suite>
class SharedFixtureServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFixtures()) return;
    std::vector<std::string> flags = FixtureServerFlags("gpt2-tiny");
    flags.push_back("--kv_cache_bytes=33554432");
    for (std::string& flag : Suite::ExtraFlags()) flags.push_back(std::move(flag));
    server_ = StartServerOrFail(testing::ServerBinary(), std::move(flags)).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    ASSERT_NE(server_, nullptr) << "the suite's server did not start";
    client_ = client::ArachClient::Connect(server_->grpc_address());
    ASSERT_TRUE(client_->WaitServing(std::chrono::seconds(30)));
  }

  inline static ServerProcess* server_ = nullptr;
  std::unique_ptr<client::ArachClient> client_;
};

}  // namespace arach::testing
