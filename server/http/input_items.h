// The input items of a stored response as OpenAI lists them (GET /v1/responses/{id}/input_items): the items of the
// request that made it (not those of the responses it continued), each with an id and in the list's shape, one
// page at a time.
#pragma once

#include <httplib.h>

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

// `items` (a request's input items as sent, a string input already made a user message) in the listed shape: a
// message's string content as one input_text part (output_text for the assistant's), `type` given, and an id where
// the item had none (msg_, fc_, fco_ or rs_, then `stem`, "_in" and its place).
nlohmann::json ListedInputItems(const nlohmann::ordered_json& items, const std::string& stem);

// The page of `items` (ListedInputItems) that the query of `request` asks for: `limit` 1..100 (20), `order` asc or
// desc (desc: the last item first), `after` / `before` an item id (the page starts after it / ends before it, in that
// order). {"object": "list", "data", "first_id", "last_id", "has_more"}; INVALID_ARGUMENT naming the parameter.
absl::StatusOr<nlohmann::json> InputItemsPage(const nlohmann::json& items, const httplib::Request& request);

}  // namespace arach::server::http
