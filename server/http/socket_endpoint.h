// The endpoints of a connected TCP socket, written as cpp-httplib writes a request's addresses (getnameinfo,
// numeric host), so that they compare equal to a request's remote_addr / local_addr.
#pragma once

#include <optional>
#include <string>

namespace arach::server::http {

struct SocketEndpoint {
  std::string host;
  int port = -1;
};

// The socket's own end (getsockname) and its peer's (getpeername); none for a descriptor that is not an IP socket.
std::optional<SocketEndpoint> LocalEndpoint(int fd);
std::optional<SocketEndpoint> PeerEndpoint(int fd);

}  // namespace arach::server::http
