// RequestDeadlineServer on loopback, plain and TLS, with a one-second request deadline: requests are answered as
// cpp-httplib answers them (keep-alive, pipelined requests, bodies, HTTPS with a client certificate check); a request
// whose header or body trickles in, and a TLS handshake that stalls, lose their connection at the deadline although
// each byte comes well within cpp-httplib's per-read timeout; the deadline is per request, not per connection; and
// stop() does not wait out the keep-alive time of an idle connection. While a request is handled, the server knows the
// connection it came on (client_connections()), so that its handler sees the client hang up.
#include "server/http/request_deadline_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/testing/certificates.h"

namespace arach::server::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kRequestTimeout{1000};
// Each trickled byte comes this long after the last: well within cpp-httplib's 5 s per read.
constexpr milliseconds kTrickle{150};

// A server of GET /hi and POST /echo (the body back) on 127.0.0.1, stopped at the end.
class RunningServer {
 public:
  explicit RunningServer(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {
    server_->Get("/hi", [this](const httplib::Request&, httplib::Response& response) {
      ++handled_;
      response.set_content("hello", "text/plain");
    });
    server_->Post("/echo", [this](const httplib::Request& request, httplib::Response& response) {
      ++handled_;
      response.set_content(request.body, "text/plain");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(milliseconds(1));
  }
  ~RunningServer() { Stop(); }
  void Stop() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  int handled() const { return handled_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> handled_{0};
};

// A raw TCP client of the server.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) { return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  bool ShutDownSending() { return shutdown(fd_, SHUT_WR) == 0; }
  // The port this client connects from.
  int local_port() const {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    return getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0 ? ntohs(address.sin_port) : -1;
  }
  // Reads what the server sent, waiting up to `wait` for more; sets `closed` once the server has closed.
  std::string Receive(milliseconds wait, bool* closed) {
    std::string received;
    const Clock::time_point until = Clock::now() + wait;
    while (Clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 10) <= 0) continue;
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        *closed = true;
        break;
      }
      received.append(buffer, static_cast<size_t>(n));
    }
    return received;
  }
  // Sends `bytes` one at a time, kTrickle apart, until the server closes the connection or all are sent; the
  // seconds from the first byte to the close (or to the end).
  double TrickleUntilClosed(const std::string& bytes, bool* closed) {
    const Clock::time_point start = Clock::now();
    for (char byte : bytes) {
      Receive(kTrickle, closed);
      if (*closed || !Send(std::string(1, byte))) {
        *closed = true;
        break;
      }
    }
    if (!*closed) Receive(milliseconds(100), closed);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RequestDeadlineServer, AnswersKeptAliveAndPipelinedRequests) {
  RunningServer server(std::make_unique<DeadlineServer>(kRequestTimeout));
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    httplib::Result got = client.Get("/hi");
    ASSERT_TRUE(got) << httplib::to_string(got.error());
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->body, "hello");
  }
  const std::string body(100000, 'b');  // larger than one read
  httplib::Result echoed = client.Post("/echo", body, "text/plain");
  ASSERT_TRUE(echoed);
  EXPECT_EQ(echoed->body, body);

  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send("GET /hi HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                       "GET /hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  bool closed = false;
  const std::string answers = raw.Receive(milliseconds(3000), &closed);
  EXPECT_EQ(Count(answers, "HTTP/1.1 200"), 3) << answers;
  EXPECT_LT(answers.find("hello"), answers.find("abc"));
  EXPECT_TRUE(closed) << "Connection: close ends the connection after its answer";
}

TEST(RequestDeadlineServer, AHeaderThatTricklesInLosesItsConnectionAtTheDeadline) {
  RunningServer server(std::make_unique<DeadlineServer>(kRequestTimeout));
  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  bool closed = false;
  const double seconds = raw.TrickleUntilClosed("GET /hi HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(40, 'z') + "\r\n\r\n", &closed);
  EXPECT_TRUE(closed) << "the whole request was let in over " << seconds << " s";
  EXPECT_GE(seconds, 0.8);
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(server.handled(), 0);
}

TEST(RequestDeadlineServer, ABodyThatTricklesInLosesItsConnectionAtTheDeadline) {
  RunningServer server(std::make_unique<DeadlineServer>(kRequestTimeout));
  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n"));
  bool closed = false;
  const double seconds = raw.TrickleUntilClosed(std::string(40, 'b'), &closed);
  EXPECT_TRUE(closed) << "the whole body was let in over " << seconds << " s";
  EXPECT_LT(seconds, 2.0) << "the connection ends with the request the deadline cut, not at the next one's";
  EXPECT_EQ(server.handled(), 0);
}

TEST(RequestDeadlineServer, EachRequestOfAConnectionHasItsOwnDeadline) {
  RunningServer server(std::make_unique<DeadlineServer>(kRequestTimeout));
  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  bool closed = false;
  for (int i = 0; i < 3; ++i) {  // 3 requests over ~2.4 s: longer than one deadline, each request quick
    ASSERT_TRUE(raw.Send("GET /hi HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string answer = raw.Receive(milliseconds(800), &closed);
    EXPECT_EQ(Count(answer, "HTTP/1.1 200"), 1) << "request " << i << ": " << answer;
    ASSERT_FALSE(closed) << "request " << i;
  }
}

TEST(RequestDeadlineServer, StopDoesNotWaitForAnIdleConnection) {
  RunningServer server(std::make_unique<DeadlineServer>(kRequestTimeout));
  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send("GET /hi HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  ASSERT_EQ(Count(raw.Receive(milliseconds(500), &closed), "HTTP/1.1 200"), 1);
  const Clock::time_point start = Clock::now();
  server.Stop();  // the connection waits up to 5 s (keep-alive) for another request
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
}

// What a handler of GET /wait saw of its connection: it waits up to `ms` milliseconds (a query parameter) for its
// client to hang up.
struct WaitSeen {
  std::atomic<bool> done{false};
  std::atomic<bool> hung_up{false};
  std::atomic<int> peer_port{-1};  // the port at the other end of the handler's descriptor
};

void ServeWait(DeadlineServer& server, WaitSeen& seen) {
  const ClientConnections& connections = server.client_connections();
  server.Get("/wait", [&connections, &seen](const httplib::Request& request, httplib::Response& response) {
    const ClientConnection client = connections.Of(request);
    if (client.descriptor().has_value()) {
      sockaddr_in peer{};
      socklen_t length = sizeof(peer);
      if (getpeername(*client.descriptor(), reinterpret_cast<sockaddr*>(&peer), &length) == 0) seen.peer_port = ntohs(peer.sin_port);
    }
    const Clock::time_point until = Clock::now() + milliseconds(std::stoi(request.get_param_value("ms")));
    bool hung_up = false;
    while (!(hung_up = client.HungUp()) && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    seen.hung_up = hung_up;
    seen.done = true;
    response.set_content("waited", "text/plain");
  });
}

bool DoneSoon(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(milliseconds(10));
  return done();
}

TEST(RequestDeadlineServer, AHandlerKnowsItsConnectionAndSeesItsClientHangUp) {
  auto owned = std::make_unique<DeadlineServer>(kRequestTimeout);
  DeadlineServer& deadline_server = *owned;
  WaitSeen seen;
  ServeWait(deadline_server, seen);
  RunningServer server(std::move(owned));

  RawClient leaving(server.port());
  ASSERT_TRUE(leaving.connected());
  ASSERT_TRUE(leaving.Send("GET /wait?ms=4000 HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(deadline_server.client_connections().size(), 1u) << "the request being handled";
  const Clock::time_point left = Clock::now();
  ASSERT_TRUE(leaving.ShutDownSending());
  ASSERT_TRUE(DoneSoon([&] { return seen.done.load(); }));
  EXPECT_TRUE(seen.hung_up) << "the handler waited out its 4 s";
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - left).count(), 1.0);
  EXPECT_EQ(seen.peer_port, leaving.local_port()) << "the handler's descriptor is its own client's connection";
  EXPECT_TRUE(DoneSoon([&] { return deadline_server.client_connections().size() == 0; }))
      << "a request is forgotten once answered";

  // A client that stays is not reported gone, and its connection serves a second request as its own.
  RawClient staying(server.port());
  ASSERT_TRUE(staying.connected());
  bool closed = false;
  for (int i = 0; i < 2; ++i) {
    seen.done = false;
    seen.peer_port = -1;
    ASSERT_TRUE(staying.Send("GET /wait?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(Count(staying.Receive(milliseconds(800), &closed), "HTTP/1.1 200"), 1) << "request " << i;
    ASSERT_TRUE(seen.done);
    EXPECT_FALSE(seen.hung_up) << "request " << i;
    EXPECT_EQ(seen.peer_port, staying.local_port()) << "request " << i;
  }
  EXPECT_FALSE(closed);
  EXPECT_EQ(deadline_server.client_connections().size(), 0u);
}

std::unique_ptr<httplib::Server> TlsServer(const testing::Certificates& certificates) {
  const std::string cert = certificates.File("server.pem"), key = certificates.File("server.key"), ca = certificates.File("ca.pem");
  return std::make_unique<DeadlineSslServer>(kRequestTimeout, std::function<bool(SSL_CTX&)>([=](SSL_CTX& context) {
                                               SSL_CTX_set_verify(&context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
                                               return SSL_CTX_use_certificate_chain_file(&context, cert.c_str()) == 1 &&
                                                      SSL_CTX_use_PrivateKey_file(&context, key.c_str(), SSL_FILETYPE_PEM) == 1 &&
                                                      SSL_CTX_load_verify_locations(&context, ca.c_str(), nullptr) == 1;
                                             }));
}

TEST(RequestDeadlineServer, AnswersOverTlsAndChecksTheClientsCertificate) {
  testing::Certificates certificates;
  ASSERT_TRUE(certificates.ok()) << "the openssl command could not make the test certificates";
  RunningServer server(TlsServer(certificates));
  httplib::SSLClient client("127.0.0.1", server.port(), certificates.File("client.pem"), certificates.File("client.key"));
  client.set_ca_cert_path(certificates.File("ca.pem"));
  client.set_keep_alive(true);
  for (int i = 0; i < 2; ++i) {
    httplib::Result got = client.Get("/hi");
    ASSERT_TRUE(got) << httplib::to_string(got.error());
    EXPECT_EQ(got->body, "hello");
  }
  httplib::Result echoed = client.Post("/echo", std::string(100000, 'b'), "text/plain");
  ASSERT_TRUE(echoed);
  EXPECT_EQ(echoed->body.size(), 100000u);

  httplib::SSLClient stranger("127.0.0.1", server.port());  // no client certificate
  stranger.set_ca_cert_path(certificates.File("ca.pem"));
  EXPECT_FALSE(stranger.Get("/hi")) << "a client without a certificate the CA signed fails the handshake";
  EXPECT_EQ(server.handled(), 3);
}

TEST(RequestDeadlineServer, AStalledTlsHandshakeLosesItsConnectionAtTheDeadline) {
  testing::Certificates certificates;
  ASSERT_TRUE(certificates.ok()) << "the openssl command could not make the test certificates";
  RunningServer server(TlsServer(certificates));
  RawClient raw(server.port());
  ASSERT_TRUE(raw.connected());
  bool closed = false;
  // The first bytes of a ClientHello record header, then a trickle of its body.
  const double seconds = raw.TrickleUntilClosed(std::string("\x16\x03\x01\x01\x00", 5) + std::string(40, '\x01'), &closed);
  EXPECT_TRUE(closed) << "the handshake was let go on for " << seconds << " s";
  EXPECT_GE(seconds, 0.8);
  EXPECT_LT(seconds, 2.0);
}

}  // namespace
}  // namespace arach::server::http
