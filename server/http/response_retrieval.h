// The query of GET /v1/responses/{id} (OpenAI's retrieve): `stream=true` reads a streamed background response's
// events again, `starting_after=N` from the event after sequence number N (with stream only). Any other parameter is
// refused, `include` among them: a stored response is kept as it was created (ask `include` when creating it).
#pragma once

#include <httplib.h>

#include <cstddef>

#include "absl/status/statusor.h"

namespace arach::server::http {

struct ResponseRetrieval {
  bool stream = false;     // the response's events instead of the response object
  size_t first_event = 0;  // the index (sequence_number) of the first event streamed: starting_after + 1
};

// INVALID_ARGUMENT naming the parameter: unknown or given twice, `stream` other than true / false, `starting_after`
// not an integer >= 0 or without stream=true.
absl::StatusOr<ResponseRetrieval> ParseResponseRetrieval(const httplib::Params& query);

}  // namespace arach::server::http
