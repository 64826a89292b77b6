// Splits a template into text and tag tokens the way Jinja2's lexer does with Hugging Face's settings
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off): newlines normalised to "\n" and one trailing
// newline dropped; "{%-"/"-%}" (and the same on "{{ }}" and "{# #}") strip the whitespace beside the tag;
// lstrip_blocks strips the spaces before a block or comment tag that starts its line (unless "{%+");
// trim_blocks drops the first newline after a block or comment tag. Comments leave nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace arach::jinja {

struct Token {
  enum class Type {
    kText,           // literal output
    kVariableBegin,  // {{
    kVariableEnd,    // }}
    kBlockBegin,     // {%
    kBlockEnd,       // %}
    kName,
    kString,         // value: the literal's text with escapes applied
    kInteger,
    kFloat,
    kOperator,       // + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
    kEnd,            // end of the template
  };
  Type type;
  std::string value;
  int line = 1;    // 1-based, in the template source
  int column = 1;  // 1-based
};

// The tokens of `source`, ending with kEnd. Errors (INVALID_ARGUMENT) name the line and column: an
// unclosed tag, comment or string, a character no expression may hold.
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace arach::jinja
