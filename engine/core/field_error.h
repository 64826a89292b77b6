// Errors about the fields of a request, named the way the caller's API names them.
//
// The engine validates requests once (engine/request.h, SamplingParams::Validate, Variant::Validate,
// CheckTokenIds) under its own field names ("temperature", "prompt", "arach_offset"). An API that calls it
// passes a FieldNames function that turns those into its own names ("sampling.temperature" over gRPC,
// "messages" over HTTP), so every API reports the same rules with its own field paths.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace arach {

// Engine field name -> the caller's field name.
using FieldNames = absl::FunctionRef<std::string(absl::string_view)>;
// The engine's own names (the default).
std::string EngineFieldName(absl::string_view field);

// INVALID_ARGUMENT "<name of field>: <what>".
absl::Status InvalidField(FieldNames names, absl::string_view field, absl::string_view what);
// INVALID_ARGUMENT "<field>: <what>", the field named as given (a caller that already speaks its API's names).
absl::Status InvalidField(absl::string_view field, absl::string_view what);
// INVALID_ARGUMENT about the key `key` of the object at `parent` ("" for the top level): "<parent>.<key>: <what>"
// where the key is a plain name (1 to 64 letters, digits and _), else "<parent or top>: parameter "<key>" <what>", so
// that the error always names a parameter path a client can read (the key itself may hold any character). `top`
// names the top level: the request's "body", or a URL's "query".
absl::Status KeyError(absl::string_view parent, const std::string& key, absl::string_view what, absl::string_view top = "body");

// INVALID_ARGUMENT "<name of field>[index]: <what>".
absl::Status InvalidFieldAt(FieldNames names, absl::string_view field, size_t index, absl::string_view what);

// Every id in [0, vocab_size); else "<field>[i]: token id X is outside the vocabulary [0, V)".
absl::Status CheckTokenIds(std::span<const int32_t> ids, int vocab_size, absl::string_view field,
                           FieldNames names = EngineFieldName);

// `text` cut to at most `max_bytes` at a character boundary, with "..." after it where it was cut: for an error
// message that quotes what a client sent (a gRPC status rides in a trailer of bounded size).
std::string ClipForError(absl::string_view text, size_t max_bytes);

}  // namespace arach
