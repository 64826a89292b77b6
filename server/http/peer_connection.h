// The TCP connection an HTTP request came on, found again from inside its handler, so that a handler that waits
// long for a whole (non-streamed) answer can tell whether its client has hung up and stop computing for nobody.
//
// cpp-httplib 0.11.4 hands its handlers the request's local and remote addresses but not its socket, and cannot
// itself say that a client left before the answer's first byte (a stream finds out when a write fails). The socket
// is the one of this process's descriptors whose two endpoints are the request's: a TCP connection's endpoints are
// unique, and cpp-httplib keeps the socket open until the handler returns, so the descriptor cannot be reused
// meanwhile.
//
// "Hung up" is what a closed connection looks like from here: the client's end of stream (FIN, also after a TLS
// close_notify), a reset, or an error. A client that only shuts down its sending side and keeps reading counts as
// gone too, as in uvicorn and other servers of OpenAI-compatible APIs.
#pragma once

#include <httplib.h>

#include <optional>

#include "absl/status/statusor.h"

namespace arach::server::http {

class PeerConnection {
 public:
  // The descriptor of the connection whose local and remote endpoints are `request`'s; NOT_FOUND when no open
  // descriptor of this process has them, UNAVAILABLE when the process's descriptors cannot be listed (/proc).
  static absl::StatusOr<PeerConnection> Find(const httplib::Request& request);

  // Whether the client has closed its side of the connection or the connection failed; never waits.
  bool HungUp() const;

  int descriptor() const { return descriptor_; }

 private:
  explicit PeerConnection(int descriptor) : descriptor_(descriptor) {}
  int descriptor_;  // owned by cpp-httplib, never closed here
};

// Whether the client of `request` has hung up, for a handler that asks now and then while it waits. The connection
// is looked up at the first ask (most answers are done before one), once; where it cannot be found, never.
class HangUpCheck {
 public:
  explicit HangUpCheck(const httplib::Request& request) : request_(request) {}
  bool operator()();

 private:
  const httplib::Request& request_;
  std::optional<absl::StatusOr<PeerConnection>> connection_;  // empty until the first ask
};

}  // namespace arach::server::http
