// Filters that write web text (Jinja2 3.1's): urlencode and xmlattr. Registered with the others in
// jinja_filters.cc.
#pragma once

#include "absl/status/statusor.h"
#include "engine/chat/jinja_value.h"

namespace arach::jinja {

// value | urlencode: a string (or another non-iterable, as Python's str writes it) percent-encoded as UTF-8 with
// "/" kept; a dict, or a sequence of (key, value) pairs, as a query string: key=value pairs joined by "&", each side
// encoded with "/" encoded too and spaces as "+".
absl::StatusOr<Value> FilterUrlEncode(const Value& v, CallArgs& a);
// dict | xmlattr(autospace=true): ` key="value"` for each item whose value is not none or undefined, both sides
// HTML-escaped, joined by spaces (led by one with autospace). A key with white space, "/", ">" or "=" is an error
// (Jinja2 3.1.3 and later raise; 3.1.2 wrote it).
absl::StatusOr<Value> FilterXmlAttr(const Value& v, CallArgs& a);

}  // namespace arach::jinja
