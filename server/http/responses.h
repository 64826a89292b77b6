// POST /v1/responses: OpenAI's Responses API over the same chat turn as /v1/chat/completions (chat_turn_call.h):
// the request read as a conversation (responses_request.h), the answer a `response` object whose output items
// (reasoning, message, function_call) are built by ResponseOutput; streamed as the Responses API's named
// events (response.created, response.in_progress, the items' added / delta / done events, then
// response.completed or response.incomplete; an `error` event when the turn fails), each with its
// sequence_number. One choice. Where the server stores answers (--responses_store_bytes), a response asked with
// store (OpenAI's default) is kept for its key: retrieved and deleted below, continued with previous_response_id.
#pragma once

#include <httplib.h>

#include <string>

#include "server/http/background_responses.h"
#include "server/http/client_connection.h"
#include "server/http/responses_request.h"
#include "server/response_store.h"
#include "server/service_context.h"

namespace arach::server::http {

// How previous_response_id finds the conversation `owner`'s stored response ended with (null without a store): a
// response not answered (running, cancelled, failed) is INVALID_ARGUMENT naming previous_response_id.
StoredConversation StoredConversationOf(ResponseStore* store, const std::string& owner);

// `background: true` (with the store): the response is stored as queued and answered so at once (with `stream`: its
// events, recorded in an EventLog kept with it in the store, as they come; the client may go away and read them again);
// it runs on a thread of `background` and is stored in progress once the engine begins it, then as it ended
// (completed, incomplete, cancelled or failed).
void HandleResponses(ServiceContext& context, BackgroundResponses& background, const httplib::Request& request,
                     httplib::Response& response, const ClientConnection& client);

// /v1/responses/{id} (request.matches[1]): GET the stored response (with stream=true a streamed background
// response's events again, from the one after sequence number starting_after: response_retrieval.h), DELETE it
// ({"id", "object", "deleted"}), GET .../input_items a page of its request's input items (input_items.h), POST
// .../cancel a background response (a running one ends cancelled; a finished one is answered as it ended; another is a
// 400). An id this caller's key has not stored, or any id where nothing is stored, is a 404.
enum class StoredResponseAction { kRetrieve, kDelete, kListInputItems, kCancel };
void ServeStoredResponse(ServiceContext& context, BackgroundResponses* background, const httplib::Request& request,
                         httplib::Response& response, StoredResponseAction action);

}  // namespace arach::server::http
