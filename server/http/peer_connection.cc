#include "server/http/peer_connection.h"

#include <dirent.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/http/socket_endpoint.h"

namespace arach::server::http {
namespace {

bool Matches(const std::optional<SocketEndpoint>& endpoint, const std::string& host, int port) {
  return endpoint.has_value() && endpoint->port == port && endpoint->host == host;
}

}  // namespace

absl::StatusOr<PeerConnection> PeerConnection::Find(const httplib::Request& request) {
  if (request.remote_port <= 0 || request.local_port <= 0) {
    return absl::NotFoundError("the request names no TCP endpoints");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> descriptors(opendir("/proc/self/fd"), closedir);
  if (descriptors == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot list this process's descriptors (/proc/self/fd): ", std::strerror(errno)));
  }
  while (const dirent* entry = readdir(descriptors.get())) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(descriptors.get())) continue;
    // The peer first: most descriptors are not connected sockets, and getpeername tells at once.
    if (!Matches(PeerEndpoint(fd), request.remote_addr, request.remote_port)) continue;
    if (!Matches(LocalEndpoint(fd), request.local_addr, request.local_port)) continue;
    return PeerConnection(fd);
  }
  return absl::NotFoundError(absl::StrCat("no open connection from ", request.remote_addr, ":", request.remote_port, " to ",
                                          request.local_addr, ":", request.local_port));
}

bool PeerConnection::HungUp() const {
  pollfd watched{descriptor_, POLLRDHUP, 0};
  if (poll(&watched, 1, 0) <= 0) return false;
  return (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool HangUpCheck::operator()() {
  if (!connection_.has_value()) connection_ = PeerConnection::Find(request_);
  return connection_->ok() && (*connection_)->HungUp();
}

}  // namespace arach::server::http
