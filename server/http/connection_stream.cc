#include "server/http/connection_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "server/http/socket_endpoint.h"

namespace arach::server::http {

ConnectionStream::ConnectionStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
    : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {
  const int flags = fcntl(fd_, F_GETFL, 0);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

ConnectionStream::~ConnectionStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

bool ConnectionStream::StartTls(SSL_CTX* context, Clock::time_point deadline) {
  ssl_ = SSL_new(context);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) return false;
  while (true) {
    ERR_clear_error();
    const int accepted = SSL_accept(ssl_);
    if (accepted == 1) return true;
    if (!WaitForTls(accepted, deadline)) return false;
  }
}

void ConnectionStream::EndTls(bool graceful) {
  if (ssl_ == nullptr || !graceful) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);
}

bool ConnectionStream::HasPendingBytes() const {
  return buffer_begin_ < buffer_end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0);
}

bool ConnectionStream::WaitForBytes(Clock::time_point until) const { return HasPendingBytes() || WaitFor(POLLIN, until); }

ConnectionStream::Clock::time_point ConnectionStream::ReadUntil() const {
  return std::min(Clock::now() + read_timeout_, read_deadline_);
}

bool ConnectionStream::WaitFor(short events, Clock::time_point until) const {
  while (true) {
    // Once `until` has passed, one look without waiting (rounded up: no look ends before `until`).
    const int64_t left = std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count());
    pollfd p{fd_, events, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (ready > 0) return true;  // ready, or an error or hang-up that the next read or write reports
    if (ready == 0 && left == 0) return false;
    if (ready < 0 && errno != EINTR) return false;
  }
}

bool ConnectionStream::WaitForTls(int result, Clock::time_point until) const {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return WaitFor(POLLIN, until);
    case SSL_ERROR_WANT_WRITE:  // (TLS may need to write to read, or read to write)
      return WaitFor(POLLOUT, until);
    default:
      return false;
  }
}

bool ConnectionStream::is_readable() const { return WaitForBytes(ReadUntil()); }

bool ConnectionStream::is_writable() const { return WaitFor(POLLOUT, Clock::now() + write_timeout_); }

ssize_t ConnectionStream::ReadSocket(char* ptr, size_t size) {
  const Clock::time_point until = ReadUntil();
  while (true) {
    if (ssl_ != nullptr) {
      ERR_clear_error();  // SSL_get_error reads this thread's queue: no stale entry of another connection
      const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) return 0;  // the client's close_notify
      if (!WaitForTls(n, until)) return -1;
      continue;
    }
    const ssize_t n = recv(fd_, ptr, size, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitFor(POLLIN, until)) return -1;
  }
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  if (Clock::now() >= read_deadline_) {  // bytes received after the deadline do not extend it
    out_of_time_ = true;
    return -1;
  }
  if (buffer_begin_ < buffer_end_) {
    const size_t n = std::min(size, buffer_end_ - buffer_begin_);
    std::memcpy(ptr, buffer_ + buffer_begin_, n);
    buffer_begin_ += n;
    return static_cast<ssize_t>(n);
  }
  const bool direct = ssl_ != nullptr || size >= kBufferBytes;
  const ssize_t n = direct ? ReadSocket(ptr, size) : ReadSocket(buffer_, kBufferBytes);
  if (n < 0 && Clock::now() >= read_deadline_) out_of_time_ = true;
  if (direct || n <= 0) return n;
  buffer_begin_ = 0;
  buffer_end_ = static_cast<size_t>(n);
  return read(ptr, size);
}

ssize_t ConnectionStream::WriteSocket(const char* ptr, size_t size) {
  const Clock::time_point until = Clock::now() + write_timeout_;
  while (true) {
    if (ssl_ != nullptr) {
      // A retried SSL_write must repeat the same arguments, which the loop does.
      ERR_clear_error();
      const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      if (!WaitForTls(n, until)) return -1;
      continue;
    }
    const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitFor(POLLOUT, until)) return -1;
  }
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  size_t written = 0;
  while (written < size) {
    const ssize_t n = WriteSocket(ptr + written, size - written);
    if (n <= 0) return -1;
    written += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(written);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  if (const std::optional<SocketEndpoint> peer = PeerEndpoint(fd_)) {
    ip = peer->host;
    port = peer->port;
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  if (const std::optional<SocketEndpoint> local = LocalEndpoint(fd_)) {
    ip = local->host;
    port = local->port;
  }
}

}  // namespace arach::server::http
