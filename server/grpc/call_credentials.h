// The credentials a gRPC call presents: its `authorization` metadata, "Bearer KEY" as over HTTP (admission.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

namespace arach::server {

inline std::string AuthorizationOf(const grpc::CallbackServerContext& call) {
  const auto& metadata = call.client_metadata();
  const auto it = metadata.find("authorization");
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

}  // namespace arach::server
