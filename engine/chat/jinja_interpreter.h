// Renders a parsed template with Jinja2's scoping: `if` shares its scope, every loop iteration and every
// macro call has its own (macros see the variables of the scope they were defined in, as they are when
// called); `set` on a namespace attribute is how state crosses a loop. Rendering is bounded (steps, output
// size, macro recursion) so that no template can hang the server.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_value.h"

namespace arach::jinja {

// The payload that marks an error the template raised itself (raise_exception): its message is shown as is,
// without a template position.
inline constexpr char kRaisedByTemplate[] = "arach.jinja/raised-by-template";

// Renders `tmpl` with `variables` (plus the builtin globals range, namespace, dict). Errors name the line and
// column of the expression that failed, except those the template raised.
absl::StatusOr<std::string> Render(const Template& tmpl, const Dict& variables);

}  // namespace arach::jinja
