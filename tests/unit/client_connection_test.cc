// ClientConnection on real loopback sockets: not hung up while the client is there (also after it sends more), hung
// up once it closes or shuts down its sending side; without a descriptor never. ClientConnections keeps each
// request's descriptor from Remember to Forget. (How RequestDeadlineServer fills it: request_deadline_server_test.)
#include "server/http/client_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace arach::server::http {
namespace {

// A connected pair over 127.0.0.1: the accepted (server) socket and the client's.
struct LoopbackConnection {
  int listener = -1;
  int server = -1;
  int client = -1;

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
    server = accept(listener, nullptr, nullptr);
    EXPECT_GE(server, 0);
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

TEST(ClientConnection, SeesTheClientClose) {
  LoopbackConnection connection;
  const ClientConnection client(connection.server);
  EXPECT_FALSE(client.HungUp());
  const char byte = 'x';
  ASSERT_EQ(write(connection.client, &byte, 1), 1);  // a client that sends more (a pipelined request) is still there
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(client.HungUp());
  connection.CloseClient();
  EXPECT_TRUE(SaysYesSoon([&] { return client.HungUp(); }));
}

TEST(ClientConnection, AClientThatShutsDownItsSendingSideHasHungUp) {
  LoopbackConnection connection;
  const ClientConnection client(connection.server);
  EXPECT_FALSE(client.HungUp());
  ASSERT_EQ(shutdown(connection.client, SHUT_WR), 0);
  EXPECT_TRUE(SaysYesSoon([&] { return client.HungUp(); }));
}

TEST(ClientConnection, OneWithoutADescriptorNeverHangsUp) {
  const ClientConnection unknown(std::nullopt);
  EXPECT_FALSE(unknown.HungUp());
}

TEST(ClientConnections, KnowsEachRequestsDescriptorFromRememberToForget) {
  ClientConnections connections;
  httplib::Request first, second;
  EXPECT_FALSE(connections.Of(first).descriptor().has_value());
  connections.Remember(first, 7);
  connections.Remember(second, 9);
  EXPECT_EQ(connections.Of(first).descriptor(), 7);
  EXPECT_EQ(connections.Of(second).descriptor(), 9);
  EXPECT_EQ(connections.size(), 2u);
  connections.Forget(&first);
  EXPECT_FALSE(connections.Of(first).descriptor().has_value());
  EXPECT_EQ(connections.Of(second).descriptor(), 9);
  connections.Remember(second, 11);  // a request object reused for the next request of another connection
  EXPECT_EQ(connections.Of(second).descriptor(), 11);
  connections.Forget(&second);
  connections.Forget(nullptr);  // (a request that never got as far as being read)
  EXPECT_EQ(connections.size(), 0u);
}

}  // namespace
}  // namespace arach::server::http
