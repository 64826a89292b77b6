#include "server/fill_in_middle.h"

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server {
namespace {

// Each family's markers, in the order they are looked for.
const FillInMiddleMarkers kFamilies[] = {
    {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},          // Qwen2.5-Coder, StarCoder2
    {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},                // StarCoder, SantaCoder
    {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},  // DeepSeek-Coder
};

bool IsOneToken(const Tokenizer& tokenizer, const std::string& marker) {
  const absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(marker, /*add_special_tokens=*/false);
  return ids.ok() && ids->size() == 1;
}

}  // namespace

std::optional<FillInMiddleMarkers> FillInMiddleMarkersOf(const Tokenizer& tokenizer) {
  for (const FillInMiddleMarkers& family : kFamilies) {
    if (IsOneToken(tokenizer, family.prefix) && IsOneToken(tokenizer, family.suffix) && IsOneToken(tokenizer, family.middle)) {
      return family;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::string> FillInMiddlePrompt(const Tokenizer& tokenizer, absl::string_view prefix, absl::string_view suffix,
                                               const std::string& suffix_field) {
  const std::optional<FillInMiddleMarkers> markers = FillInMiddleMarkersOf(tokenizer);
  if (!markers) {
    return InvalidField(suffix_field, "this model has no fill-in-the-middle tokens (<|fim_prefix|>, <fim_prefix> or "
                                      "<｜fim▁begin｜> and their kin): a suffix needs a code model trained to fill a gap");
  }
  return absl::StrCat(markers->prefix, prefix, markers->suffix, suffix, markers->middle);
}

}  // namespace arach::server
