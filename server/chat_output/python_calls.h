// The pythonic tool-call syntax (Llama 3.2's and Llama 4's "python list of the calls"): a turn that is
// `[get_weather(city='Paris', days=3), get_time()]`, each call a function name with keyword arguments whose
// values are Python literals (strings in either quotes, numbers, True / False / None, lists, tuples, dicts).
// Read here into calls with JSON arguments (as Python's ast.literal_eval then json.dumps would); the grammar that
// holds a call's arguments to its function's parameter schema is python_call_grammar.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/chat_output/chat_output_parser.h"

namespace arach::server {

// `text` (surrounding whitespace aside) as a non-empty list of calls; nullopt when it is anything else: not
// Python, a positional argument, a name or expression where a literal must be, a key given twice.
std::optional<std::vector<ParsedToolCall>> ParsePythonCalls(absl::string_view text);

// One call `name(key=value, ...)` at the start of `text` (whitespace before it skipped), read as a list of calls
// streams in: the call once its `)` is written, or that more text is needed to tell, or that it is not a call.
// A call read from some text is read alike from any text that goes on from it.
struct PythonCallRead {
  enum class Result { kCall, kIncomplete, kInvalid };
  Result result = Result::kInvalid;
  ParsedToolCall call;  // kCall: the call, its arguments as JSON
  size_t length = 0;    // kCall: the bytes of `text` it took, through its `)`
};
PythonCallRead ReadPythonCall(absl::string_view text);

// Whether `name` can be written as a Python identifier (a function or keyword name of the syntax).
bool IsPythonIdentifier(absl::string_view name);

}  // namespace arach::server
