// The input of a batch run: OpenAI's Batch API file format (JSON Lines), one request per line:
//   {"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": ..., "messages": [...]}}
// The one reader of that format (arach-cli batch): every line is checked before any request is sent, and an error
// names the line and the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace arach::client {

struct BatchRequest {
  int line = 0;            // 1-based line of the input file
  size_t index = 0;        // 0-based among the file's requests (its output line's id is "batch_req_<index>")
  std::string custom_id;   // the caller's id, unique in the file; copied to the output line
  std::string url;         // one of BatchUrls()
  std::string body;        // the JSON object sent as it was written (compact)
};

// The routes a batch line may name: the OpenAI API's non-streamed calls that arach-server answers.
const std::vector<std::string_view>& BatchUrls();

// INVALID_ARGUMENT "line N: FIELD: PROBLEM" ("line N: PROBLEM" without a field): how both batch files' readers
// (this one and batch_output's) name what is wrong with a line.
absl::Status BatchLineError(int line, absl::string_view field, absl::string_view problem);

// At most this many requests in one file (OpenAI's Batch API limit).
inline constexpr size_t kMaxBatchRequests = 50000;

// Reads every request of `text` (a JSON Lines file; blank lines are skipped). INVALID_ARGUMENT naming the line
// ("line 7: custom_id: ...") for a line that is not a JSON object, an unknown key, a custom_id that is missing,
// empty or used before, a method other than POST, a url not in BatchUrls(), a body that is not an object or asks
// for `stream`, or more than kMaxBatchRequests requests.
absl::StatusOr<std::vector<BatchRequest>> ParseBatchInput(std::string_view text);

}  // namespace arach::client
