// How the HTTP API listens (arach-server's --http_listen, --max_request_bytes, --http_threads).
#pragma once

#include <cstddef>
#include <string>

namespace arach::server::http {

struct HttpOptions {
  std::string listen = "0.0.0.0:8000";  // HOST:PORT (port 0 picks one)
  size_t max_request_bytes = 16 << 20;  // larger bodies get 413
  int threads = 128;                    // connections served at once (a stream holds one for its length)
};

}  // namespace arach::server::http
