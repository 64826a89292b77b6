// Parses template tokens into a syntax tree with Jinja2's grammar and operator precedence. Everything
// outside the supported subset (another tag such as include or call, an unknown filter or test, *args)
// is an INVALID_ARGUMENT naming the line and column, so that a template is refused when it is loaded
// rather than rendered differently.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "engine/chat/jinja_ast.h"

namespace arach::jinja {

absl::StatusOr<Template> ParseTemplate(std::string_view source);

}  // namespace arach::jinja
