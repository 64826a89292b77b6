// POST /v1/completions: OpenAI's completions API on the engine. One choice per prompt and per `n`
// (seeded seed, seed + 1, ...); `stream` answers with server-sent events ending in `data: [DONE]`;
// `echo` with `logprobs` and `max_tokens: 0` scores the prompt (the same numbers as gRPC Score). A client
// that goes away mid-stream cancels its choices.
#pragma once

#include <httplib.h>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                       const ClientConnection& client);

}  // namespace arach::server::http
