// PeerConnection on real loopback sockets: a request's connection is found by its endpoints as the server sees them
// (not the client's own socket, whose endpoints are the same two reversed), it is not hung up while the client is
// there, and it is once the client closes or shuts down its sending side; a request with endpoints no socket has is
// NOT_FOUND, and HangUpCheck then never says yes.
#include "server/http/peer_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace arach::server::http {
namespace {

// A connected pair over 127.0.0.1: the accepted (server) socket, the client's, and the request the server would see.
struct LoopbackConnection {
  int listener = -1;
  int server = -1;
  int client = -1;
  httplib::Request request;

  LoopbackConnection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&address), length), 0);
    sockaddr_in peer{};
    socklen_t peer_length = sizeof(peer);
    server = accept(listener, reinterpret_cast<sockaddr*>(&peer), &peer_length);
    EXPECT_GE(server, 0);
    request.local_addr = "127.0.0.1";
    request.local_port = ntohs(address.sin_port);
    request.remote_addr = "127.0.0.1";
    request.remote_port = ntohs(peer.sin_port);
  }
  ~LoopbackConnection() {
    for (int fd : {client, server, listener}) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseClient() {
    close(client);
    client = -1;
  }
};

// Whether `check` says yes within a second (the kernel delivers the client's FIN to the server's socket at once on
// loopback; the wait only absorbs scheduling).
template <typename Check>
bool SaysYesSoon(Check&& check) {
  for (int i = 0; i < 100; ++i) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(PeerConnection, FindsTheServersSocketOfTheRequestAndSeesTheClientClose) {
  LoopbackConnection connection;
  absl::StatusOr<PeerConnection> found = PeerConnection::Find(connection.request);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->descriptor(), connection.server) << "the client's own socket has the same endpoints reversed";
  EXPECT_FALSE(found->HungUp());
  const char byte = 'x';
  ASSERT_EQ(write(connection.client, &byte, 1), 1);  // a client that sends more (a pipelined request) is still there
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(found->HungUp());
  connection.CloseClient();
  EXPECT_TRUE(SaysYesSoon([&] { return found->HungUp(); }));
}

TEST(PeerConnection, AClientThatShutsDownItsSendingSideHasHungUp) {
  LoopbackConnection connection;
  HangUpCheck hung_up(connection.request);
  EXPECT_FALSE(hung_up());
  ASSERT_EQ(shutdown(connection.client, SHUT_WR), 0);
  EXPECT_TRUE(SaysYesSoon(hung_up));
}

TEST(PeerConnection, ARequestWhoseEndpointsNoSocketHasIsNotFound) {
  LoopbackConnection connection;
  httplib::Request elsewhere = connection.request;
  elsewhere.remote_port = connection.request.local_port;  // the listener's port: no connection comes from there
  EXPECT_EQ(PeerConnection::Find(elsewhere).status().code(), absl::StatusCode::kNotFound);
  elsewhere = connection.request;
  elsewhere.remote_addr = "127.0.0.2";
  EXPECT_EQ(PeerConnection::Find(elsewhere).status().code(), absl::StatusCode::kNotFound);
  elsewhere = httplib::Request();  // not over TCP (no ports)
  EXPECT_EQ(PeerConnection::Find(elsewhere).status().code(), absl::StatusCode::kNotFound);

  HangUpCheck never(elsewhere);
  connection.CloseClient();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(never()) << "a connection that cannot be found is never reported gone";
}

}  // namespace
}  // namespace arach::server::http
