// One accepted HTTP connection as the byte stream cpp-httplib's request parser reads and its responses are written
// to, over plain TCP or TLS, with a deadline on reading (request_deadline_server.h sets one per request).
//
// cpp-httplib's own streams bound each read by a timeout but not a request as a whole: a client that sends a
// header byte every few seconds (slowloris) held a server thread for as long as it liked. Here every wait for
// bytes also ends at the read deadline, after which reads fail and the connection is closed. The socket is
// non-blocking; each wait is a poll() bounded by the per-operation timeout and, for reads, the deadline.
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace arach::server::http {

class ConnectionStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  // `fd`: the accepted socket (made non-blocking here; never closed here). `read_timeout` / `write_timeout`: the
  // longest wait for one read or write to make progress.
  ConnectionStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout);
  ~ConnectionStream() override;  // frees the TLS session
  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;

  // Makes this a TLS connection: the server's handshake with `context` (OpenSSL's certificate and client-certificate
  // checks included), which must be over by `deadline`. False when it fails or times out.
  bool StartTls(SSL_CTX* context, Clock::time_point deadline);
  // Sends TLS's close_notify (once, without waiting for the client's), where `graceful` and TLS was started.
  void EndTls(bool graceful);
  const SSL* ssl() const { return ssl_; }

  // Reads fail once `deadline` has passed (Clock::time_point::max(): never).
  void set_read_deadline(Clock::time_point deadline) {
    read_deadline_ = deadline;
    out_of_time_ = false;
  }
  // Whether a read failed because the deadline had passed (since it was set).
  bool out_of_time() const { return out_of_time_; }
  // Whether bytes can be read now (received and not yet read, a pipelined request's) or arrive before `until`.
  bool WaitForBytes(Clock::time_point until) const;

  using httplib::Stream::write;
  bool is_readable() const override;  // bytes can be read now or within the read timeout and deadline
  bool is_writable() const override;  // a write can make progress within the write timeout
  ssize_t read(char* ptr, size_t size) override;   // > 0 bytes read, 0 the client's end of stream, -1 failed
  ssize_t write(const char* ptr, size_t size) override;  // all of `size`, or -1
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // Waits until the socket is ready for `events` (POLLIN / POLLOUT) and `until` has not passed.
  bool WaitFor(short events, Clock::time_point until) const;
  // After a TLS call returned `result` (<= 0): waits until `until` for what it wants (the socket readable or
  // writable); whether to call it again (false: it failed, or the wait ended first).
  bool WaitForTls(int result, Clock::time_point until) const;
  Clock::time_point ReadUntil() const;   // now + read_timeout, or the read deadline if sooner
  bool HasPendingBytes() const;          // received and not yet read
  ssize_t ReadSocket(char* ptr, size_t size);  // one recv / SSL_read, waiting as needed
  ssize_t WriteSocket(const char* ptr, size_t size);  // one send / SSL_write, waiting as needed

  int fd_;
  SSL* ssl_ = nullptr;  // owned; null: plain TCP
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  Clock::time_point read_deadline_ = Clock::time_point::max();
  bool out_of_time_ = false;
  // Plain TCP reads go through this buffer: the parser reads request lines a byte at a time (TLS has its own
  // record buffer, SSL_pending). [buffer_begin_, buffer_end_) is unread.
  static constexpr size_t kBufferBytes = 4096;
  char buffer_[kBufferBytes];
  size_t buffer_begin_ = 0;
  size_t buffer_end_ = 0;
};

}  // namespace arach::server::http
