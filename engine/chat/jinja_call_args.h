// How the built-in filters, tests and methods read their arguments (by position or by keyword, as Python
// binds them) and report a wrong one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/chat/jinja_value.h"

namespace arach::jinja {

// Python's TypeError: a template that calls something with the wrong kind of value (INVALID_ARGUMENT).
inline absl::Status TypeError(const std::string& what) { return absl::InvalidArgumentError(what); }

// The argument at `index` or named `name`; null when absent.
const Value* Arg(const CallArgs& args, size_t index, const char* name);
// The argument's truthiness; `fallback` when absent.
bool ArgBool(const CallArgs& args, size_t index, const char* name, bool fallback);
// An integer (or bool) argument; `fallback` when absent or none.
absl::StatusOr<int64_t> ArgInt(const CallArgs& args, size_t index, const char* name, int64_t fallback);
// A required string argument.
absl::StatusOr<std::string> ArgString(const CallArgs& args, size_t index, const char* name);

}  // namespace arach::jinja
