// The error of a listener (gRPC, HTTP, metrics) that could not bind its address, one wording for all of them. The
// listeners do not share ports (no SO_REUSEPORT): a second server on a port in use fails here instead of splitting
// the connections with the first.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace arach::server {

inline absl::Status CannotListenError(absl::string_view address) {
  return absl::UnavailableError(
      absl::StrCat("cannot listen on ", address, ": the port is in use by another process, or the host is not an address of this machine"));
}

}  // namespace arach::server
