// A command's text from the command line: --text TEXT, or --file F (whose contents win when both are given).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace arach::client {

// The text; INVALID_ARGUMENT when the file cannot be read or neither gives any text.
absl::StatusOr<std::string> TextArgument(const std::string& text, const std::string& file);

}  // namespace arach::client
