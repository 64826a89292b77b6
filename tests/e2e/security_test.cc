// TLS, mutual TLS and request limits of the real server process.
#include <httplib.h>

#include <filesystem>
#include <thread>

#include "client/arach_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/certificates.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using client::ArachClient;
using client::ClientTls;
using ::testing::HasSubstr;
using testing::Certificates;
using testing::ServerProcess;

bool Generates(ArachClient& client) {
  arach::v1::GenerateRequest r;
  r.set_text("hello");
  r.set_max_tokens(2);
  return client.Generate(r, [](const auto&) {}, std::chrono::system_clock::now() + std::chrono::seconds(10)).ok();
}

TEST(Tls, ServesTlsAndRefusesPlaintext) {
  Certificates certs;
  ASSERT_TRUE(certs.ok()) << "openssl failed";
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--kv_cache_bytes=16777216",
                                                           "--tls_cert=" + certs.File("server.pem"),
                                                           "--tls_key=" + certs.File("server.key")});
  ASSERT_TRUE(server.ok()) << server.status();
  ClientTls tls;
  tls.root_certs = certs.Read("ca.pem");
  auto secure = ArachClient::Connect((*server)->grpc_address(), tls);
  EXPECT_TRUE(Generates(*secure));
  auto plain = ArachClient::Connect((*server)->grpc_address());
  EXPECT_FALSE(Generates(*plain)) << "a plaintext client must not get through";
}

TEST(Tls, MutualTlsRequiresAClientCertificate) {
  Certificates certs;
  ASSERT_TRUE(certs.ok());
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--kv_cache_bytes=16777216",
                                                           "--tls_cert=" + certs.File("server.pem"),
                                                           "--tls_key=" + certs.File("server.key"),
                                                           "--tls_client_ca=" + certs.File("ca.pem")});
  ASSERT_TRUE(server.ok()) << server.status();
  ClientTls anonymous;
  anonymous.root_certs = certs.Read("ca.pem");
  EXPECT_FALSE(Generates(*ArachClient::Connect((*server)->grpc_address(), anonymous)));
  ClientTls with_cert = anonymous;
  with_cert.cert_chain = certs.Read("client.pem");
  with_cert.private_key = certs.Read("client.key");
  EXPECT_TRUE(Generates(*ArachClient::Connect((*server)->grpc_address(), with_cert)));
}

TEST(Tls, RotatedCertificateFilesAreServedWithinTheReloadInterval) {
  Certificates certs;
  ASSERT_TRUE(certs.ok());
  ASSERT_TRUE(certs.MakeOtherSet());
  const std::string cert = certs.File("served.pem"), key = certs.File("served.key");
  std::filesystem::copy_file(certs.File("server.pem"), cert);
  std::filesystem::copy_file(certs.File("server.key"), key);
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--kv_cache_bytes=16777216",
                                                           "--tls_cert=" + cert, "--tls_key=" + key, "--tls_reload_seconds=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto trusting = [&](const std::string& ca) {
    ClientTls tls;
    tls.root_certs = certs.Read(ca);
    return ArachClient::Connect((*server)->grpc_address(), tls);
  };
  EXPECT_TRUE(Generates(*trusting("ca.pem")));
  std::filesystem::copy_file(certs.File("other-server.pem"), cert, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(certs.File("other-server.key"), key, std::filesystem::copy_options::overwrite_existing);
  bool rotated = false;  // gRPC's file watcher reads the files again every --tls_reload_seconds
  for (int i = 0; i < 50 && !rotated; ++i) {
    rotated = Generates(*trusting("other-ca.pem"));  // a new channel: a new handshake
    if (!rotated) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(rotated) << "new connections get the rotated certificate";
  EXPECT_FALSE(Generates(*trusting("ca.pem")));
}

TEST(Limits, PromptOutputAndMessageSizes) {
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--kv_cache_bytes=16777216",
                                                           "--max_prompt_tokens=8", "--max_tokens_limit=16",
                                                           "--max_request_bytes=1024"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ArachClient::Connect((*server)->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(30)));
  auto generate = [&](const arach::v1::GenerateRequest& r) { return client->Generate(r, [](const auto&) {}); };
  arach::v1::GenerateRequest long_prompt;
  for (int i = 0; i < 9; ++i) long_prompt.mutable_token_ids()->add_ids(5);
  grpc::Status s = generate(long_prompt);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("prompt.token_ids: 9 tokens exceed the limit of 8 (--max_prompt_tokens)"));
  arach::v1::GenerateRequest many_tokens;
  many_tokens.set_text("hi");
  many_tokens.set_max_tokens(17);
  s = generate(many_tokens);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("max_tokens: 17 exceeds the limit of 16"));
  arach::v1::GenerateRequest huge;
  huge.set_text(std::string(2000, 'x'));
  s = generate(huge);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << "gRPC refuses messages over --max_request_bytes";
}

// A stream is written a chunk at a time, but the first chunk of an echo with logprobs holds its prompt's log-probs
// whole: held to --max_response_bytes as a whole answer is (400 naming logprobs, before any work); a shorter prompt
// streams.
TEST(Limits, AStreamedEchosPromptLogprobsAreHeldToTheResponseLimit) {
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                           "--kv_cache_bytes=16777216", "--max_response_bytes=8192"});
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client http("http://" + (*server)->http_address());
  http.set_read_timeout(60);
  // 100 prompt tokens x (own + chosen + 5 alternatives) = 700 log-probs, 11,200 bytes at least: over 8 KiB.
  nlohmann::json body = {{"model", "tiny"}, {"prompt", std::vector<int>(100, 5)}, {"max_tokens", 2}, {"echo", true},
                         {"logprobs", 5}, {"stream", true}};
  const httplib::Result refused = http.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  const nlohmann::json error = nlohmann::json::parse(refused->body, nullptr, false);
  EXPECT_EQ(error["error"]["param"], "logprobs") << refused->body;
  EXPECT_THAT(refused->body, HasSubstr("a choice's first chunk would hold 700 log-probs")) << refused->body;
  body["prompt"] = std::vector<int>(10, 5);
  const httplib::Result streamed = http.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200) << streamed->body;
  EXPECT_THAT(streamed->body, HasSubstr("data: [DONE]"));
}

TEST(Limits, ConcurrentStreamsPerConnectionAreCapped) {
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + testing::SlowModelDir(), "--kv_cache_bytes=134217728",
                                                           "--max_concurrent_streams=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ArachClient::Connect((*server)->grpc_address());  // one connection for both calls
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  arach::v1::GenerateRequest r;
  for (int i = 0; i < 8; ++i) r.mutable_token_ids()->add_ids(100 + i);
  r.set_max_tokens(40);
  r.set_ignore_eos(true);
  std::atomic<bool> first_done{false};
  bool second_started_before_first_finished = false;
  std::thread first([&] {
    EXPECT_TRUE(client->Generate(r, [](const auto&) {}).ok());
    first_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(client->Generate(r, [&](const auto& m) {
    if (m.token_ids_size() > 0 && !first_done) second_started_before_first_finished = true;
  }).ok());
  first.join();
  EXPECT_FALSE(second_started_before_first_finished) << "with one stream per connection the second call waits";
}

}  // namespace
}  // namespace arach
