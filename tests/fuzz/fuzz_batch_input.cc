// libFuzzer: arbitrary bytes as an OpenAI Batch API input file reach its one reader (ParseBatchInput, arach-cli
// batch): every outcome is a list of requests that keep the format's rules or an INVALID_ARGUMENT naming a line;
// never a crash or an exception.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "client/batch_input.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
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
