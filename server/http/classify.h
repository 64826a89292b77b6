// POST /classify, /v1/classify: vLLM's classify API on a model served as a classifier (--classifier_from_token:
// Engine::classifier_token_ids): each input one kClassify engine request, answered with the class tokens'
// probabilities (the softmax of their logits at the input's last position; one token: its sigmoid) and the label of
// the most probable (the token as the vocabulary spells it). Answered whole.
#pragma once

#include <httplib.h>

#include "server/http/client_connection.h"
#include "server/service_context.h"

namespace arach::server::http {

void HandleClassify(ServiceContext& context, const httplib::Request& request, httplib::Response& response,
                    const ClientConnection& client);

}  // namespace arach::server::http
