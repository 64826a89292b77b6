#include "engine/tokenizer/byte_level_bpe_tokenizer.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/tokenizer/gpt2_pretokenizer.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

absl::Status JsonError(const std::string& path, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": field \"", field, "\" ", what));
}

absl::StatusOr<std::unordered_map<std::string, int32_t>> ParseVocab(const json& vocab, const std::string& path,
                                                                    absl::string_view field) {
  if (!vocab.is_object()) return JsonError(path, field, "must be an object of token -> id");
  std::unordered_map<std::string, int32_t> out;
  out.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer()) return JsonError(path, field, absl::StrCat("has a non-integer id for \"", token, "\""));
    out.emplace(token, id.get<int32_t>());
  }
  return out;
}

absl::StatusOr<NormalizationForm> ParseNormalizer(const json& normalizer, const std::string& path) {
  if (normalizer.is_null()) return NormalizationForm::kNone;
  if (!normalizer.is_object() || !normalizer.contains("type")) return JsonError(path, "normalizer", "must be null or an object with a type");
  const std::string type = normalizer["type"].is_string() ? normalizer["type"].get<std::string>() : "";
  if (type == "NFC") return NormalizationForm::kNfc;
  if (type == "NFKC") return NormalizationForm::kNfkc;
  if (type == "NFD") return NormalizationForm::kNfd;
  if (type == "NFKD") return NormalizationForm::kNfkd;
  if (type == "Sequence" && normalizer.contains("normalizers") && normalizer["normalizers"].is_array() &&
      normalizer["normalizers"].empty()) {
    return NormalizationForm::kNone;
  }
  return JsonError(path, "normalizer", absl::StrCat("type \"", type, "\" is not supported (NFC, NFKC, NFD, NFKD)"));
}

// Accepts a ByteLevel pre-tokenizer, alone or as the only member of a Sequence.
absl::Status ParsePreTokenizer(const json& pre, const std::string& path, ByteLevelBpeOptions& options) {
  const json* byte_level = &pre;
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 1) {
    byte_level = &pre["pretokenizers"][0];
  }
  if (!byte_level->is_object() || byte_level->value("type", "") != "ByteLevel") {
    return JsonError(path, "pre_tokenizer", "must be ByteLevel (only byte-level BPE tokenizers are supported)");
  }
  options.add_prefix_space = byte_level->value("add_prefix_space", false);
  options.use_regex = byte_level->value("use_regex", true);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseMerges(const json& merges, const std::string& path) {
  if (!merges.is_array()) return JsonError(path, "model.merges", "must be an array");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {  // "left right"
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos) return JsonError(path, "model.merges", absl::StrCat("entry ", i, " is not \"left right\""));
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["left", "right"]
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return JsonError(path, "model.merges", absl::StrCat("entry ", i, " is neither \"a b\" nor [\"a\", \"b\"]"));
    }
  }
  return out;
}

}  // namespace

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(BpeModel model, std::vector<AddedToken> added, ByteLevelBpeOptions options,
                                             std::string description)
    : model_(std::move(model)), options_(options), description_(std::move(description)) {
  std::vector<AddedToken> raw, normalized;
  int32_t max_id = model_.max_id();
  for (const AddedToken& token : added) {
    (token.normalized ? normalized : raw).push_back(token);
    added_content_[token.id] = token.content;
    max_id = std::max(max_id, token.id);
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
  vocab_size_ = max_id + 1;
}

absl::StatusOr<std::unique_ptr<ByteLevelBpeTokenizer>> ByteLevelBpeTokenizer::FromTokenizerJson(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  if (!root.contains("model") || !root["model"].is_object()) return JsonError(path, "model", "is missing");
  const json& model = root["model"];
  if (model.value("type", "BPE") != "BPE") {
    return JsonError(path, "model.type", absl::StrCat("\"", model.value("type", ""), "\" is not supported (BPE)"));
  }
  if (model.value("byte_fallback", false)) return JsonError(path, "model.byte_fallback", "is not supported");
  ByteLevelBpeOptions options;
  ARACH_ASSIGN_OR_RETURN(options.normalization, ParseNormalizer(root.value("normalizer", json()), path));
  ARACH_RETURN_IF_ERROR(ParsePreTokenizer(root.value("pre_tokenizer", json()), path, options));
  if (!model.contains("vocab")) return JsonError(path, "model.vocab", "is missing");
  if (!model.contains("merges")) return JsonError(path, "model.merges", "is missing");
  ARACH_ASSIGN_OR_RETURN(auto vocab, ParseVocab(model["vocab"], path, "model.vocab"));
  ARACH_ASSIGN_OR_RETURN(auto merges, ParseMerges(model["merges"], path));
  const bool ignore_merges = model.value("ignore_merges", false);
  ARACH_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Create(std::move(vocab), merges, ignore_merges, path));

  std::vector<AddedToken> added;
  if (root.contains("added_tokens")) {
    if (!root["added_tokens"].is_array()) return JsonError(path, "added_tokens", "must be an array");
    for (const json& t : root["added_tokens"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
          !t["content"].is_string()) {
        return JsonError(path, "added_tokens", "entries need an integer id and a string content");
      }
      AddedToken token;
      token.id = t["id"].get<int32_t>();
      token.content = t["content"].get<std::string>();
      token.special = t.value("special", false);
      token.normalized = t.value("normalized", !token.special);
      if (t.value("lstrip", false) || t.value("rstrip", false) || t.value("single_word", false)) {
        return JsonError(path, "added_tokens", absl::StrCat("token \"", token.content, "\" uses lstrip/rstrip/single_word, which is not supported"));
      }
      added.push_back(std::move(token));
    }
  }
  const std::string description = absl::StrCat("byte-level BPE (", path, ")");
  return std::unique_ptr<ByteLevelBpeTokenizer>(new ByteLevelBpeTokenizer(std::move(bpe), std::move(added), options, description));
}

absl::StatusOr<std::unique_ptr<ByteLevelBpeTokenizer>> ByteLevelBpeTokenizer::FromVocabAndMerges(
    const std::string& vocab_path, const std::string& merges_path) {
  ARACH_ASSIGN_OR_RETURN(std::string vocab_text, ReadFileToString(vocab_path));
  const json vocab_json = json::parse(vocab_text, nullptr, /*allow_exceptions=*/false);
  if (vocab_json.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(vocab_path, ": not valid JSON"));
  ARACH_ASSIGN_OR_RETURN(auto vocab, ParseVocab(vocab_json, vocab_path, "(root)"));

  ARACH_ASSIGN_OR_RETURN(std::string merges_text, ReadFileToString(merges_path));
  std::vector<std::pair<std::string, std::string>> merges;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(merges_text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && absl::StartsWith(line, "#version"))) continue;
    const size_t space = line.find(' ', 1);
    if (space == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(merges_path, ": line ", line_number, " is not \"left right\""));
    }
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  std::vector<AddedToken> added;
  if (const auto it = vocab.find("<|endoftext|>"); it != vocab.end()) {
    added.push_back(AddedToken{"<|endoftext|>", it->second, /*special=*/true, /*normalized=*/false});
  }
  ARACH_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Create(std::move(vocab), merges, /*ignore_merges=*/false, merges_path));
  const std::string description = absl::StrCat("byte-level BPE (", vocab_path, " + merges.txt)");
  return std::unique_ptr<ByteLevelBpeTokenizer>(
      new ByteLevelBpeTokenizer(std::move(bpe), std::move(added), ByteLevelBpeOptions{}, description));
}

absl::Status ByteLevelBpeTokenizer::EncodePlain(absl::string_view text, std::vector<int32_t>& out) const {
  std::string prefixed;
  if (options_.add_prefix_space && !text.empty() && text.front() != ' ') {
    prefixed = absl::StrCat(" ", text);
    text = prefixed;
  }
  std::vector<absl::string_view> pieces;
  if (options_.use_regex) {
    ARACH_ASSIGN_OR_RETURN(pieces, SplitGpt2(text));
  } else {
    pieces.push_back(text);
  }
  for (absl::string_view piece : pieces) ARACH_RETURN_IF_ERROR(model_.Encode(alphabet_.Encode(piece), out));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ByteLevelBpeTokenizer::Encode(absl::string_view text) const {
  ARACH_RETURN_IF_ERROR(DecodeUtf8(text).status());  // reject malformed UTF-8 up front
  std::vector<int32_t> ids;
  for (const TextSegment& raw : raw_matcher_.Split(text)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    ARACH_ASSIGN_OR_RETURN(std::string normalized, Normalize(options_.normalization, raw.text));
    for (const TextSegment& segment : normalized_matcher_.Split(normalized)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
      } else {
        ARACH_RETURN_IF_ERROR(EncodePlain(segment.text, ids));
      }
    }
  }
  return ids;
}

absl::StatusOr<std::string> ByteLevelBpeTokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (const auto it = added_content_.find(id); it != added_content_.end()) {
      out += it->second;
      continue;
    }
    const std::string& token = model_.TokenString(id);
    if (token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is not in the vocabulary (size ", vocab_size_, ")"));
    }
    ARACH_ASSIGN_OR_RETURN(std::vector<CodePoint> chars, DecodeUtf8(token));
    for (const CodePoint& c : chars) {
      const int byte = alphabet_.ByteOf(c.value);
      if (byte >= 0) {
        out.push_back(static_cast<char>(byte));
      } else {
        AppendUtf8(c.value, out);  // not a byte-level symbol: keep the character
      }
    }
  }
  return out;
}

std::optional<int32_t> ByteLevelBpeTokenizer::TokenToId(absl::string_view token) const {
  for (const auto& [id, content] : added_content_) {
    if (content == token) return id;
  }
  return model_.TokenId(token);
}

}  // namespace arach
