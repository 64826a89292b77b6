// TLS, mutual TLS and request limits of the real server process.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client/arach_client.h"
#include "engine/core/mapped_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using client::ArachClient;
using client::ClientTls;
using ::testing::HasSubstr;
using testing::ServerProcess;

// A throwaway CA, and server (localhost, 127.0.0.1) and client certificates it signed.
class Certificates {
 public:
  Certificates() {
    const std::string script = dir_.File("make-certs.sh");
    std::ofstream(script) << "set -e\ncd \"$(dirname \"$0\")\"\n"
                          << "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=arach-test-ca\n"
                          << "for who in server client; do\n"
                          << "  openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who\n"
                          << "  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > $who.ext\n"
                          << "  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 2 -extfile $who.ext\n"
                          << "done\n";
    ok_ = std::system(("bash " + script + " > " + dir_.File("openssl.log") + " 2>&1").c_str()) == 0 &&
          std::filesystem::exists(dir_.File("client.pem"));
  }
  bool ok() const { return ok_; }
  std::string File(const std::string& name) const { return dir_.File(name); }
  std::string Read(const std::string& name) const { return *ReadFileToString(File(name)); }

 private:
  testing::ScopedTempDir dir_;
  bool ok_ = false;
};

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
