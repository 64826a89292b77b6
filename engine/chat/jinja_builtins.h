// What templates call by name: filters (x | trim), tests (x is string), the methods of strings and dicts
// (x.strip(), d.get(k)), attribute and item access with Jinja2's fallbacks, and the operators' Python
// semantics. Behaviour follows Jinja2 3.1 as Hugging Face configures it (tojson = json.dumps with
// ensure_ascii=False; no HTML autoescaping).
// Implemented by responsibility: jinja_filters.cc (filters, tests; jinja_layout_filters.cc and jinja_web_filters.cc
// hold some of the filters), jinja_objects.cc (attributes, items, slices,
// iteration, membership, dict and list methods), jinja_str_methods.cc (str methods), jinja_operators.cc (operators, % formatting), jinja_globals.cc
// (range, namespace, dict); on jinja_text (Python's str operations) and jinja_call_args (argument binding).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/chat/jinja_value.h"

namespace arach::jinja {

bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);

// `operand | name(args)`.
absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& operand, CallArgs& args);
// `operand is name(args)`.
absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& operand, CallArgs& args);

// obj.name: a method of a string, dict or list, a dict's item or a namespace's attribute; else undefined.
absl::StatusOr<Value> GetAttribute(const Value& object, const std::string& name);
// Python's getattr(obj, name), as the attr filter reads it: GetAttribute without a dict's items.
absl::StatusOr<Value> GetPythonAttribute(const Value& object, const std::string& name);
// text.name: a method of Python's str (strip, split, rsplit, splitlines, startswith, endswith, removeprefix,
// removesuffix, upper, lower, title, capitalize, replace, find, rfind, index, rindex, count, join, format); else
// undefined.
absl::StatusOr<Value> StringMethod(const std::string& text, const std::string& name);
// obj[key]: an item (negative list indices count from the end), else a method by that name; else undefined.
absl::StatusOr<Value> GetItem(const Value& object, const Value& key);
// obj[start:stop:step] of a list or string.
absl::StatusOr<Value> GetSlice(const Value& object, const Value& start, const Value& stop, const Value& step);

// Binary operators with Python's rules: + - * / // % ** ~ ("%" on a string formats it).
absl::StatusOr<Value> BinaryOperation(const std::string& op, const Value& lhs, const Value& rhs);
// `needle in haystack` (substring, list member, dict key).
absl::StatusOr<bool> Contains(const Value& haystack, const Value& needle);
// The items a for loop visits: a list's items, a string's characters, a dict's keys; undefined: none.
absl::StatusOr<std::vector<Value>> Iterate(const Value& value);

// The error a use of an undefined value raises.
absl::Status UndefinedError(const Value& undefined);

// Python's printf-style formatting (`fmt % args`, the format filter): %s %r %d %i %f %e %g %x %o %c %%
// with flags, width and precision.
absl::StatusOr<std::string> PercentFormat(const std::string& format, const std::vector<Value>& args);

// Functions every template can call: range, namespace, joiner, cycler, dict (raise_exception and strftime_now are given by
// the chat template, which decides how they behave).
Dict BuiltinGlobals();

// Limits that keep any template's rendering bounded.
inline constexpr size_t kMaxSequence = 1 << 20;  // elements of a range or repeated list, bytes of a repeated string

}  // namespace arach::jinja
