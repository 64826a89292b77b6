// Python's str operations on UTF-8 text, as the chat templates' filters and string methods use them: code
// points (invalid UTF-8 replaced), ICU case mapping, Python's and Jinja's title case, strip / split / replace
// with Python's rules (whitespace as str.isspace sees it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace arach::jinja {

std::u32string CodePoints(const std::string& text);  // invalid UTF-8 decodes as U+FFFD
std::string Utf8(const std::u32string& text);
std::string Upper(const std::string& text);       // str.upper (full case mapping, e.g. ß -> SS)
std::string Lower(const std::string& text);       // str.lower
std::string Capitalize(const std::string& text);  // str.capitalize: first upper, the rest lower
std::string PythonTitle(const std::string& text); // str.title
std::string JinjaTitle(const std::string& text);  // the title filter (words split at spaces, -, brackets)
// str.strip / lstrip / rstrip: whitespace, or the characters of `chars` (a string value; null: whitespace).
std::string Strip(const std::string& text, const Value* chars, bool left, bool right);
// str.split(sep=None, maxsplit=-1) and str.rsplit (the same, from the right).
std::vector<Value> Split(const std::string& text, const Value* sep, int64_t maxsplit);
std::vector<Value> RSplit(const std::string& text, const Value* sep, int64_t maxsplit);
// str.splitlines(keepends=False).
std::vector<Value> SplitLines(const std::string& text, bool keepends);
// str.replace(from, to, count=-1).
std::string Replace(const std::string& text, const std::string& from, const std::string& to, int64_t count);

}  // namespace arach::jinja
