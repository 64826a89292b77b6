// A test suite whose tests share one arach-server on the qwen3-tiny fixture served with the real Qwen3 chat
// template (taken from ../shared/fixtures/chat/templates.json at test time: Hermes tool calls, <think>
// reasoning) and 32 MiB of KV cache, started once for the suite. Derive as
//   class MySuite : public testing::SharedQwen3ChatServer<MySuite> {};
// Without ../shared/fixtures the tests skip.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"

namespace arach::testing {

template <typename Suite>
class SharedQwen3ChatServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFixtures()) return;
    dir_ = new ScopedTempDir();
    const std::string path = dir_->path() + "/qwen3.jinja";
    std::ifstream in(FixturePath("chat/templates.json"));
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(path) << nlohmann::json::parse(text.str())["qwen3"]["template"].get<std::string>();
    server_ = StartServerOrFail(ServerBinary(), {"--model=" + FixturePath("qwen3-tiny"), "--chat_template=" + path,
                                                 "--kv_cache_bytes=33554432"})
                  .release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    server_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    ASSERT_NE(server_, nullptr) << "the suite's server did not start";
  }

  inline static ScopedTempDir* dir_ = nullptr;
  inline static ServerProcess* server_ = nullptr;
};

}  // namespace arach::testing
