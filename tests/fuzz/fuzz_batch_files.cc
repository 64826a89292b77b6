// libFuzzer: arbitrary bytes as an OpenAI Batch API input file reach its one reader (ParseBatchInput, arach-cli
// batch), and as a previous run's output the reader of --resume (ReadFinishedLines): every outcome is what the
// format's rules allow (requests with unique ids, known routes and object bodies; kept lines of known, unique ids) or
// an INVALID_ARGUMENT naming a line; never a crash or an exception.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "client/batch_input.h"
#include "client/batch_output.h"
#include "nlohmann/json.hpp"

namespace {

void CheckOutputReader(const std::string& text) {
  std::vector<arach::client::BatchRequest> requests(3);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].custom_id = "r" + std::to_string(i);
  const auto finished = arach::client::ReadFinishedLines(text, requests);
  if (!finished.ok()) {
    if (finished.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (std::string(finished.status().message()).rfind("line ", 0) != 0) std::abort();
    return;
  }
  if (finished->lines.size() != finished->custom_ids.size()) std::abort();  // one kept line per request at most
  for (const std::string& id : finished->custom_ids) {
    if (id != "r0" && id != "r1" && id != "r2") std::abort();
  }
  if (finished->not_2xx > static_cast<int>(finished->lines.size())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckOutputReader(text);
  const auto requests = arach::client::ParseBatchInput(text);
  if (!requests.ok()) {
    if (requests.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    const std::string message(requests.status().message());
    if (message.rfind("line ", 0) != 0 && message != "the file holds no request") std::abort();
    return 0;
  }
  if (requests->empty()) std::abort();
  std::set<std::string> ids;
  int previous_line = 0;
  for (const arach::client::BatchRequest& r : *requests) {
    if (r.custom_id.empty() || !ids.insert(r.custom_id).second) std::abort();
    if (r.line <= previous_line) std::abort();
    previous_line = r.line;
    const auto& urls = arach::client::BatchUrls();
    if (std::find(urls.begin(), urls.end(), r.url) == urls.end()) std::abort();
    const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) std::abort();  // the body goes out as one JSON object
    if (body.contains("stream") && body["stream"] != false && !body["stream"].is_null()) std::abort();
  }
  return 0;
}
