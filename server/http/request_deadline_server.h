// cpp-httplib's servers, plain and TLS, with a deadline for each request to arrive: its request line, headers and
// body must be in within `request_timeout` of its first byte (a TLS handshake within `request_timeout` of the
// connection), else the connection is closed. cpp-httplib alone bounds each read (5 s) but not a request, so a
// client that trickled a byte every few seconds (slowloris) held one of the server's threads for as long as it
// liked, and enough of them held all.
//
// Everything else is cpp-httplib's: its request parser, routing and response writer (Server::process_request),
// its keep-alive rules (keep_alive_max_count, keep_alive_timeout) and the timeouts of one read or write; only the
// loop over a connection's requests and the stream under it (connection_stream.h) are ours. The loop also tells
// handlers which connection their request came on (client_connections(): whether the client has hung up).
#pragma once

#include <httplib.h>

#include <chrono>
#include <utility>

#include "server/http/client_connection.h"

namespace arach::server::http {

template <typename Base>  // httplib::Server or httplib::SSLServer
class RequestDeadlineServer final : public Base {
 public:
  // `request_timeout` > 0; `base_args` construct the Base (the SSLServer's context setup).
  template <typename... BaseArgs>
  explicit RequestDeadlineServer(std::chrono::milliseconds request_timeout, BaseArgs&&... base_args)
      : Base(std::forward<BaseArgs>(base_args)...), request_timeout_(request_timeout) {}

  // The connection of each request being handled (a handler asks with its request).
  const ClientConnections& client_connections() const { return client_connections_; }

 private:
  // Serves one accepted connection, request after request, and closes it (httplib calls it on a pool thread).
  bool process_and_close_socket(socket_t sock) override;

  std::chrono::milliseconds request_timeout_;
  ClientConnections client_connections_;
};

using DeadlineServer = RequestDeadlineServer<httplib::Server>;
using DeadlineSslServer = RequestDeadlineServer<httplib::SSLServer>;

}  // namespace arach::server::http
