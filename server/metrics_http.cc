#include "server/metrics_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace arach::server {
namespace {

constexpr int kIoTimeoutMs = 2000;
constexpr size_t kMaxRequestBytes = 8192;

bool WaitFor(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, kIoTimeoutMs) == 1 && (p.revents & events) != 0;
}

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    if (!WaitFor(fd, POLLOUT)) return;
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

std::string Response(const std::string& status, const std::string& content_type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpEndpoint>> MetricsHttpEndpoint::Start(const std::string& listen, BodyFn body) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("metrics: \"", listen, "\" is not HOST:PORT"));
  const std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: cannot resolve ", listen, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ", listen, ": ", error));
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    ::close(fd);
    return absl::InternalError("metrics: cannot create a pipe");
  }
  std::unique_ptr<MetricsHttpEndpoint> endpoint(new MetricsHttpEndpoint(fd, wake[0], wake[1], bound_port, std::move(body)));
  endpoint->thread_ = std::thread([e = endpoint.get()] { e->Serve(); });
  return endpoint;
}

MetricsHttpEndpoint::MetricsHttpEndpoint(int listen_fd, int wake_read, int wake_write, int port, BodyFn body)
    : listen_fd_(listen_fd), wake_read_(wake_read), wake_write_(wake_write), port_(port), body_(std::move(body)) {}

MetricsHttpEndpoint::~MetricsHttpEndpoint() {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_, &byte, 1);
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

void MetricsHttpEndpoint::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Handle(client);
    ::close(client);
  }
}

void MetricsHttpEndpoint::Handle(int fd) {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    if (!WaitFor(fd, POLLIN)) return;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find("\r\n"));
  if (!absl::StartsWith(line, "GET ")) {
    WriteAll(fd, Response("405 Method Not Allowed", "text/plain", "only GET\n"));
    return;
  }
  const size_t path_end = line.find(' ', 4);
  const std::string path = line.substr(4, path_end == std::string::npos ? std::string::npos : path_end - 4);
  if (path != "/metrics" && !absl::StartsWith(path, "/metrics?")) {
    WriteAll(fd, Response("404 Not Found", "text/plain", "see /metrics\n"));
    return;
  }
  WriteAll(fd, Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body_()));
}

}  // namespace arach::server
