#include "server/http/response_retrieval.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server::http {

absl::StatusOr<ResponseRetrieval> ParseResponseRetrieval(const httplib::Params& query) {
  for (const auto& [param, value] : query) {
    if (param == "include" || param == "include[]") {
      return InvalidField("include",
                          "is not applied on retrieval: a stored response is kept as it was created (ask include when creating it)");
    }
    if (param != "stream" && param != "starting_after") {
      return KeyError("", param, "is not a parameter of a response's retrieval (stream, starting_after)", "query");
    }
    if (query.count(param) > 1) return InvalidField(param, "is given more than once");
  }
  ResponseRetrieval retrieval;
  if (const auto stream = query.find("stream"); stream != query.end()) {
    if (stream->second != "true" && stream->second != "false") {
      return InvalidField("stream", absl::StrCat("'", ClipForError(stream->second, 40), "' must be true or false"));
    }
    retrieval.stream = stream->second == "true";
  }
  if (const auto after = query.find("starting_after"); after != query.end()) {
    int64_t sequence_number = -1;
    if (!absl::SimpleAtoi(after->second, &sequence_number) || sequence_number < 0) {
      return InvalidField("starting_after", absl::StrCat("'", ClipForError(after->second, 40), "' must be an integer >= 0"));
    }
    if (!retrieval.stream) return InvalidField("starting_after", "is only allowed with stream=true");
    retrieval.first_event = static_cast<size_t>(sequence_number) + 1;
  }
  return retrieval;
}

}  // namespace arach::server::http
