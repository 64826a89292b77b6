// The TCP connection each HTTP request in progress came on, so that a handler that waits long for a whole
// (non-streamed) answer can tell whether its client has hung up and stop computing for nobody.
//
// cpp-httplib 0.11.4 hands its handlers the request but not its socket, and cannot itself say that a client left
// before the answer's first byte (a stream finds out when a write fails). Our loop over a connection's requests
// (request_deadline_server.h) knows the socket: it registers each request in the server's ClientConnections before
// the request is routed and forgets it once answered; the socket stays open meanwhile (it is closed after the last
// request of its connection), so its descriptor cannot be reused while a handler asks.
//
// "Hung up" is what a closed connection looks like from here: the client's end of stream (FIN, also after a TLS
// close_notify), a reset, or an error. A client that only shuts down its sending side and keeps reading counts as
// gone too, as in uvicorn and other servers of OpenAI-compatible APIs.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"

namespace arach::server::http {

// One request's connection, as its handler sees it.
class ClientConnection {
 public:
  // `descriptor`: the socket (owned by the server, never closed here); none: a request served elsewhere (e.g. by a
  // plain httplib::Server), whose client is never reported gone.
  explicit ClientConnection(std::optional<int> descriptor) : descriptor_(descriptor) {}

  // Whether the client has closed its side of the connection or the connection failed; never waits.
  bool HungUp() const;

  std::optional<int> descriptor() const { return descriptor_; }

 private:
  std::optional<int> descriptor_;
};

// The requests being served and the sockets they came on; thread-safe (each connection's thread registers its
// requests, handlers on those threads ask).
class ClientConnections {
 public:
  // `request` came on `descriptor`; until Forget(&request).
  void Remember(const httplib::Request& request, int descriptor);
  // `request` (only its address is used: it may be gone) has been answered.
  void Forget(const httplib::Request* request);
  // The connection `request` came on; one without a descriptor where `request` is not registered.
  ClientConnection Of(const httplib::Request& request) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  absl::flat_hash_map<const httplib::Request*, int> descriptors_;  // guarded by mutex_
};

}  // namespace arach::server::http
