#include "server/http/socket_endpoint.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace arach::server::http {
namespace {

// The endpoint getsockname or getpeername (`get`) reports for `fd`.
std::optional<SocketEndpoint> EndpointOf(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (get(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return std::nullopt;
  SocketEndpoint endpoint;
  if (address.ss_family == AF_INET) {
    endpoint.port = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  } else if (address.ss_family == AF_INET6) {
    endpoint.port = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  } else {
    return std::nullopt;
  }
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) {
    return std::nullopt;
  }
  endpoint.host = host;
  return endpoint;
}

}  // namespace

std::optional<SocketEndpoint> LocalEndpoint(int fd) { return EndpointOf(fd, getsockname); }
std::optional<SocketEndpoint> PeerEndpoint(int fd) { return EndpointOf(fd, getpeername); }

}  // namespace arach::server::http
