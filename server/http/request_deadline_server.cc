#include "server/http/request_deadline_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <type_traits>
#include <utility>

#include "server/http/connection_stream.h"

namespace arach::server::http {
namespace {

using Clock = ConnectionStream::Clock;

// How often a connection waiting for its next request checks that the server still runs (stop() ends the wait).
constexpr std::chrono::milliseconds kStopCheckInterval{50};

std::chrono::milliseconds Duration(time_t seconds, time_t microseconds) {
  return std::chrono::seconds(seconds) + std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(microseconds));
}

}  // namespace

template <typename Base>
bool RequestDeadlineServer<Base>::process_and_close_socket(socket_t sock) {
  constexpr bool kTls = std::is_same_v<Base, httplib::SSLServer>;
  bool served = false;
  {
    ConnectionStream stream(sock, Duration(this->read_timeout_sec_, this->read_timeout_usec_),
                            Duration(this->write_timeout_sec_, this->write_timeout_usec_));
    bool connected = true;
    if constexpr (kTls) connected = stream.StartTls(this->ssl_context(), Clock::now() + request_timeout_);
    // What a request learns of its connection, once read and before it is routed: its socket (kept in
    // client_connections_ until it is answered) and, over TLS, its session.
    const httplib::Request* handled = nullptr;
    const std::function<void(httplib::Request&)> setup = [&](httplib::Request& request) {
      if constexpr (kTls) request.ssl = stream.ssl();
      client_connections_.Remember(request, sock);
      handled = &request;
    };
    // As cpp-httplib: up to keep_alive_max_count requests, each begun within keep_alive_timeout of the last one's
    // answer, while the server runs; the last one is answered with "Connection: close".
    size_t requests_left = this->keep_alive_max_count_;
    while (connected && requests_left > 0) {
      const Clock::time_point idle_until = Clock::now() + std::chrono::seconds(this->keep_alive_timeout_sec_);
      bool next_request = false;
      do {
        next_request = stream.WaitForBytes(std::min(idle_until, Clock::now() + kStopCheckInterval));
      } while (!next_request && this->svr_sock_ != INVALID_SOCKET && Clock::now() < idle_until);
      if (!next_request || this->svr_sock_ == INVALID_SOCKET) break;  // (a stopped server takes no new request)
      stream.set_read_deadline(Clock::now() + request_timeout_);
      bool connection_closed = false;
      served = this->process_request(stream, /*close_connection=*/requests_left == 1, connection_closed, setup);
      client_connections_.Forget(std::exchange(handled, nullptr));
      // A request cut by the deadline may still have been answered (cpp-httplib answers a broken request 400);
      // its connection ends there.
      if (!served || connection_closed || stream.out_of_time()) break;
      --requests_left;
    }
    stream.EndTls(/*graceful=*/served);
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return served;
}

template class RequestDeadlineServer<httplib::Server>;
template class RequestDeadlineServer<httplib::SSLServer>;

}  // namespace arach::server::http
