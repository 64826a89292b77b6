// The output of a batch run: OpenAI's Batch API output format (JSON Lines), one line per request:
//   {"id": "batch_req_3", "custom_id": "request-4",
//    "response": {"status_code": 200, "request_id": "...", "body": {...}}, "error": null}
// or, for a request no answer came to, "response": null, "error": {"code": "connection_error", "message": ...}.
// The one writer of those lines, and the one reader of a previous run's (arach-cli batch --resume).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/batch_input.h"

namespace arach::client {

// What became of one request after its tries.
struct BatchResult {
  int status_code = 0;     // the answer's HTTP status; 0 when none came
  std::string request_id;  // the server's x-request-id
  std::string body;        // the answer's body (kept as text in the line when it is not JSON)
  std::string error;       // why no answer came (status_code 0)
  int attempts = 0;
};

// Whether an answer of `status_code` (0: none) may be different when asked again: the server was full or
// rate-limited (429), draining or loading (503), or a proxy lost its replica (502).
bool WorthAnotherTry(int status_code);

// The output line (without its newline) of `request` (id "batch_req_<request.index>").
std::string BatchOutputLine(const BatchRequest& request, const BatchResult& result);

// A previous run's output, read back to go on from it.
struct FinishedLines {
  std::vector<std::string> lines;      // the lines kept, as they were written, in their order
  std::set<std::string> custom_ids;    // the requests they answer: not sent again
  int dropped = 0;                     // lines left to be answered again (no answer, or one worth another try)
  int not_2xx = 0;                     // of the lines kept, those answered with another status than 2xx
};

// Reads `text`, the output a run of `requests` wrote, keeping each line with a final answer (a status that is not
// WorthAnotherTry). A last line cut short (the run was stopped while writing it) is dropped. INVALID_ARGUMENT naming
// the line for another line that is not an output line, or one whose custom_id is not among `requests` or was
// answered before (the output of another file).
absl::StatusOr<FinishedLines> ReadFinishedLines(std::string_view text, const std::vector<BatchRequest>& requests);

}  // namespace arach::client
