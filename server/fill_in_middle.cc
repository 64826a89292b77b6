#include "server/fill_in_middle.h"

#include <algorithm>

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

// Tokens that begin something other than the gap's text, in the families' spellings: padding after the gap,
// the next repository or file of a repository-level prompt.
const char* const kOtherContentMarkers[] = {
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",                          // Qwen2.5-Coder
    "<fim_pad>", "<repo_name>", "<reponame>", "<file_sep>", "<filename>",  // StarCoder, StarCoder2, SantaCoder
};

// The id of `marker` where it is one token of the vocabulary.
std::optional<int32_t> OneTokenId(const Tokenizer& tokenizer, const std::string& marker) {
  const absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(marker, /*add_special_tokens=*/false);
  if (!ids.ok() || ids->size() != 1) return std::nullopt;
  return ids->front();
}

bool IsOneToken(const Tokenizer& tokenizer, const std::string& marker) { return OneTokenId(tokenizer, marker).has_value(); }

}  // namespace

std::optional<FillInMiddleMarkers> FillInMiddleMarkersOf(const Tokenizer& tokenizer) {
  for (const FillInMiddleMarkers& family : kFamilies) {
    if (IsOneToken(tokenizer, family.prefix) && IsOneToken(tokenizer, family.suffix) && IsOneToken(tokenizer, family.middle)) {
      return family;
    }
  }
  return std::nullopt;
}

absl::StatusOr<FillInMiddle> FillInMiddlePrompt(const Tokenizer& tokenizer, absl::string_view prefix, absl::string_view suffix,
                                                const std::string& suffix_field) {
  const std::optional<FillInMiddleMarkers> markers = FillInMiddleMarkersOf(tokenizer);
  if (!markers) {
    return InvalidField(suffix_field, "this model has no fill-in-the-middle tokens (<|fim_prefix|>, <fim_prefix> or "
                                      "<｜fim▁begin｜> and their kin): a suffix needs a code model trained to fill a gap");
  }
  FillInMiddle fim;
  fim.prompt = absl::StrCat(markers->prefix, prefix, markers->suffix, suffix, markers->middle);
  std::vector<std::string> ends = {markers->prefix, markers->suffix, markers->middle};
  ends.insert(ends.end(), std::begin(kOtherContentMarkers), std::end(kOtherContentMarkers));
  for (const std::string& end : ends) {
    if (const std::optional<int32_t> id = OneTokenId(tokenizer, end)) fim.end_token_ids.push_back(*id);
  }
  return fim;
}

void AddFillInMiddleEnds(const FillInMiddle& fim, SamplingParams* sampling) {
  if (sampling->ignore_eos) return;
  std::vector<int32_t>& stops = sampling->stop_token_ids;
  for (const int32_t id : fim.end_token_ids) {
    if (std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
  }
}

}  // namespace arach::server
