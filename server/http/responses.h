// POST /v1/responses: OpenAI's Responses API over the same chat turn as /v1/chat/completions (chat_turn_call.h):
// the request read as a conversation (responses_request.h), the answer a `response` object whose output items
// (reasoning, message, function_call) are built by ResponseOutput; streamed as the Responses API's named
// events (response.created, response.in_progress, the items' added / delta / done events, then
// response.completed or response.incomplete; an `error` event when the turn fails), each with its
// sequence_number. One choice; nothing is stored (the answer says store false).
#pragma once

#include <httplib.h>

#include "server/service_context.h"

namespace arach::server::http {

void HandleResponses(ServiceContext& context, const httplib::Request& request, httplib::Response& response);

}  // namespace arach::server::http
