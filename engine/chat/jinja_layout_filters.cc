#include "engine/chat/jinja_layout_filters.h"

#include <unicode/uchar.h>

#include <string>
#include <vector>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_call_args.h"
#include "engine/chat/jinja_text.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

// The fill_with argument (at `index`) when given and not none.
const Value* FillWith(const CallArgs& a, size_t index) {
  const Value* fill = Arg(a, index, "fill_with");
  return fill != nullptr && !fill->is_none() ? fill : nullptr;
}

// Python's \w in a str pattern: letters, numbers (decimal, letter-like, other) and the underscore.
bool IsWordCharacter(char32_t c) {
  if (c == U'_' || u_isalpha(static_cast<UChar32>(c))) return true;
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

}  // namespace

absl::StatusOr<Value> FilterBatch(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  ARACH_ASSIGN_OR_RETURN(const int64_t count, ArgInt(a, 0, "linecount", 0));
  const Value* fill = FillWith(a, 1);
  if (fill != nullptr && count > static_cast<int64_t>(kMaxSequence)) return TypeError("batch's count is too large to fill");
  std::vector<Value> batches, batch;
  for (Value& item : items) {
    if (static_cast<int64_t>(batch.size()) == count) batches.push_back(Value::List(std::exchange(batch, {})));
    batch.push_back(std::move(item));
  }
  if (!batch.empty()) {
    while (fill != nullptr && static_cast<int64_t>(batch.size()) < count) batch.push_back(*fill);
    batches.push_back(Value::List(std::move(batch)));
  }
  return Value::List(std::move(batches));
}

absl::StatusOr<Value> FilterSlice(const Value& v, CallArgs& a) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  ARACH_ASSIGN_OR_RETURN(const int64_t slices, ArgInt(a, 0, "slices", 0));
  if (slices < 1 || static_cast<uint64_t>(slices) > kMaxSequence) return TypeError("slice needs a number of slices, from 1");
  const Value* fill = FillWith(a, 1);
  const int64_t length = static_cast<int64_t>(items.size());
  const int64_t per_slice = length / slices;
  const int64_t with_extra = length % slices;  // the first ones take one more
  std::vector<Value> out;
  int64_t offset = 0;
  for (int64_t n = 0; n < slices; ++n) {
    const int64_t start = offset + n * per_slice;
    if (n < with_extra) ++offset;
    const int64_t end = offset + (n + 1) * per_slice;
    std::vector<Value> slice(items.begin() + start, items.begin() + end);
    if (fill != nullptr && n >= with_extra) slice.push_back(*fill);
    out.push_back(Value::List(std::move(slice)));
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterTruncate(const Value& v, CallArgs& a) {
  const std::u32string text = CodePoints(v.Str());
  ARACH_ASSIGN_OR_RETURN(const int64_t length, ArgInt(a, 0, "length", 255));
  const bool kill_words = ArgBool(a, 1, "killwords", false);
  const Value* end_arg = Arg(a, 2, "end");
  const std::u32string end = CodePoints(end_arg != nullptr ? end_arg->Str() : "...");
  ARACH_ASSIGN_OR_RETURN(const int64_t leeway, ArgInt(a, 3, "leeway", 5));  // Jinja2's truncate.leeway policy
  if (length < static_cast<int64_t>(end.size())) return TypeError("truncate's length is shorter than its end");
  if (leeway < 0) return TypeError("truncate's leeway is negative");
  if (static_cast<int64_t>(text.size()) <= length + leeway) return Value::String(Utf8(text));
  std::u32string kept = text.substr(0, static_cast<size_t>(length) - end.size());
  if (!kill_words) {
    const size_t space = kept.rfind(U' ');
    if (space != std::u32string::npos) kept.resize(space);
  }
  return Value::String(Utf8(kept + end));
}

absl::StatusOr<Value> FilterCenter(const Value& v, CallArgs& a) {
  const std::u32string text = CodePoints(v.Str());
  ARACH_ASSIGN_OR_RETURN(const int64_t width, ArgInt(a, 0, "width", 80));
  if (width <= static_cast<int64_t>(text.size())) return Value::String(v.Str());
  if (static_cast<uint64_t>(width) > kMaxSequence) return TypeError("center's width is too large");
  const int64_t margin = width - static_cast<int64_t>(text.size());
  const int64_t left = margin / 2 + (margin & width & 1);  // CPython's str.center
  return Value::String(std::string(static_cast<size_t>(left), ' ') + Utf8(text) + std::string(static_cast<size_t>(margin - left), ' '));
}

absl::StatusOr<Value> FilterWordCount(const Value& v, CallArgs&) {
  int64_t words = 0;
  bool in_word = false;
  for (const char32_t c : CodePoints(v.Str())) {
    const bool word = IsWordCharacter(c);
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value::Int(words);
}

}  // namespace arach::jinja
