// POST /v1/chat/completions: the conversation rendered with the model's chat template (engine/chat), tokenized
// without adding special tokens again (the template writes them), and generated like a completion until the
// end-of-turn token (the tokenizer's eos_token, with config/generation_config's end-of-sequence ids). Answers
// in OpenAI's chat shape (message / delta with the assistant role, chat log-probs), streamed or not.
#pragma once

#include <httplib.h>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleChatCompletions(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                           const ClientConnection& client);

}  // namespace arach::server::http
