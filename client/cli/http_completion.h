// A streamed completion over arach-server's OpenAI HTTP API (POST /v1/completions, server-sent events),
// for `arach-cli bench --http`: the same request as a gRPC Generate, timed the same way.
#pragma once

#include <string>

#include "arach/v1/inference.pb.h"
#include "client/cli/stream_timing.h"

namespace arach::client {

// Sends `request` (token ids, max_tokens, sampling, variant) as a streamed completion of `model` to `address`
// (HOST:PORT), with `api_key` as its bearer token when given; each event with tokens is given to `timer`. Returns
// "" when the stream ended with `data: [DONE]`, else what went wrong ("http 429", "http connection", "stream error").
std::string StreamHttpCompletion(const std::string& address, const std::string& model,
                                 const arach::v1::GenerateRequest& request, StreamTimer& timer, const std::string& api_key = "");

}  // namespace arach::client
