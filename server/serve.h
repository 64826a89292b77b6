// The life of arach-server: start the gRPC and HTTP servers (health NOT_SERVING / 503, calls UNAVAILABLE),
// load the model, serve, and on SIGTERM/SIGINT drain (a lame duck, not ready but serving, for drain_announce_ms; then new calls UNAVAILABLE, calls in flight finish within
// the grace period) and stop. Returns the process exit status: 0 after a drain, 1 when starting failed.
#pragma once

#include "server/signals.h"
#include "server/server_options.h"

namespace arach::server {

int Serve(const ServerConfig& config, const SignalPipe& signal_pipe);

}  // namespace arach::server
