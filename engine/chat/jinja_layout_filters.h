// Filters that lay text and sequences out (Jinja2 3.1's): batch, slice, truncate, center, wordcount. Registered
// with the others in jinja_filters.cc.
#pragma once

#include "absl/status/statusor.h"
#include "engine/chat/jinja_value.h"

namespace arach::jinja {

// items | batch(count, fill_with=none): lists of `count` items (the last filled up with fill_with when given; a
// count below 1 gives what Jinja2 gives: an empty list, then one of every item).
absl::StatusOr<Value> FilterBatch(const Value& v, CallArgs& a);
// items | slice(slices, fill_with=none): `slices` lists, the first ones one item longer where the items do not
// divide evenly (the others filled up with fill_with when given).
absl::StatusOr<Value> FilterSlice(const Value& v, CallArgs& a);
// text | truncate(length=255, killwords=false, end='...', leeway=5): the text when at most length + leeway code
// points; else cut to length - len(end) (at the last space unless killwords) and `end` added.
absl::StatusOr<Value> FilterTruncate(const Value& v, CallArgs& a);
// text | center(width=80): Python's str.center.
absl::StatusOr<Value> FilterCenter(const Value& v, CallArgs& a);
// text | wordcount: the runs of word characters (Python's \w: letters, numbers, underscore).
absl::StatusOr<Value> FilterWordCount(const Value& v, CallArgs& a);

}  // namespace arach::jinja
