// The grammar of the pythonic tool-call syntax (python_calls.h): a call's keyword arguments as Python literals
// held to its function's parameter schema, in xgrammar's EBNF, for the tool-call constraint (tools.h).
#pragma once

#include <string>
#include <vector>

#include "server/chat_output/tools.h"

namespace arach::server {

// An EBNF grammar (xgrammar's dialect) of `tool`'s keyword arguments as Python literals typed by its parameter
// schema: each property in the order of their names as `name=value`, the required ones always, separated by ", "; a
// value is a string (or one of its enum), an integer, a number, True / False, None, a list or a dict as the
// property's type says, any literal where it says nothing. Names must be Python identifiers (IsPythonIdentifier).
std::string PythonArgumentsGrammar(const ToolSpec& tool);

}  // namespace arach::server
