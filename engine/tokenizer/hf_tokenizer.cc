#include "engine/tokenizer/hf_tokenizer.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/tokenizer/json_component.h"
#include "engine/tokenizer/unicode.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

absl::StatusOr<BpeVocabulary> ParseVocab(const json& vocab, const std::string& where) {
  if (!vocab.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, ": must be an object of token -> id"));
  BpeVocabulary out;
  out.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer()) return absl::InvalidArgumentError(absl::StrCat(where, ": token \"", token, "\" has a non-integer id"));
    out.emplace(token, id.get<int32_t>());
  }
  return out;
}

// Merges as "left right" strings (older files) or ["left", "right"] pairs (tokenizers >= 0.20).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseMerges(const json& merges, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos) return absl::InvalidArgumentError(absl::StrCat(where, "[", i, "]: not \"left right\""));
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(where, "[", i, "]: neither \"a b\" nor [\"a\", \"b\"]"));
    }
  }
  return out;
}

absl::StatusOr<BpeModel> ParseModel(const json& spec, const std::string& where) {
  ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(spec, where));
  ARACH_ASSIGN_OR_RETURN(const std::string type, c.String("type", "BPE"));
  if (type != "BPE") return c.Error(absl::StrCat("model type \"", type, "\" is not supported (BPE)"));
  if (const json* dropout = c.Get("dropout"); dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return c.Error("\"dropout\" is not supported (it makes tokenization random)");
  }
  BpeOptions options;
  ARACH_ASSIGN_OR_RETURN(options.ignore_merges, c.Bool("ignore_merges", false));
  ARACH_ASSIGN_OR_RETURN(options.byte_fallback, c.Bool("byte_fallback", false));
  ARACH_ASSIGN_OR_RETURN(options.fuse_unk, c.Bool("fuse_unk", false));
  ARACH_ASSIGN_OR_RETURN(options.continuing_subword_prefix, c.String("continuing_subword_prefix", ""));
  ARACH_ASSIGN_OR_RETURN(options.end_of_word_suffix, c.String("end_of_word_suffix", ""));
  if (const json* unk = c.Get("unk_token"); unk != nullptr) {
    if (!unk->is_string()) return c.Error("\"unk_token\" must be a string");
    options.unk_token = unk->get<std::string>();
  }
  ARACH_ASSIGN_OR_RETURN(const json* vocab_json, c.Object("vocab"));
  ARACH_ASSIGN_OR_RETURN(const json* merges_json, c.Array("merges"));
  ARACH_RETURN_IF_ERROR(c.CheckAllRead());
  ARACH_ASSIGN_OR_RETURN(auto vocab, ParseVocab(*vocab_json, c.Child("vocab")));
  ARACH_ASSIGN_OR_RETURN(auto merges, ParseMerges(*merges_json, c.Child("merges")));
  return BpeModel::Create(std::move(vocab), merges, options, where);
}

absl::StatusOr<std::vector<AddedToken>> ParseAddedTokens(const json& list, const std::string& where) {
  if (!list.is_array()) return absl::InvalidArgumentError(absl::StrCat(where, ": must be an array"));
  std::vector<AddedToken> out;
  for (size_t i = 0; i < list.size(); ++i) {
    ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(list[i], absl::StrCat(where, "[", i, "]")));
    AddedToken token;
    ARACH_ASSIGN_OR_RETURN(const int64_t id, c.Int("id", -1));
    if (id < 0 || id > INT32_MAX) return c.Error("needs an integer \"id\" >= 0");
    token.id = static_cast<int32_t>(id);
    ARACH_ASSIGN_OR_RETURN(token.content, c.String("content"));
    ARACH_ASSIGN_OR_RETURN(token.special, c.Bool("special", false));
    ARACH_ASSIGN_OR_RETURN(token.normalized, c.Bool("normalized", !token.special));
    ARACH_ASSIGN_OR_RETURN(token.single_word, c.Bool("single_word", false));
    ARACH_ASSIGN_OR_RETURN(token.lstrip, c.Bool("lstrip", false));
    ARACH_ASSIGN_OR_RETURN(token.rstrip, c.Bool("rstrip", false));
    ARACH_RETURN_IF_ERROR(c.CheckAllRead());
    if (!token.content.empty()) out.push_back(std::move(token));
  }
  return out;
}

}  // namespace

HfTokenizer::HfTokenizer(Parts parts)
    : model_(std::move(*parts.model)),
      normalizer_(std::move(parts.normalizer)),
      pre_tokenizer_(std::move(parts.pre_tokenizer)),
      post_processor_(std::move(parts.post_processor)),
      decoder_(std::move(parts.decoder)),
      config_(std::move(parts.config)),
      description_(std::move(parts.description)) {}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Assemble(Parts parts) {
  std::vector<AddedToken> added = std::move(parts.added);
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer(std::move(parts)));
  int32_t max_id = tokenizer->model_.max_id();
  for (AddedToken& token : added) {
    max_id = std::max(max_id, token.id);
    tokenizer->added_by_id_[token.id] = token;
    tokenizer->added_by_content_[token.content] = token.id;
    if (token.normalized) {
      std::string pattern = token.content;
      if (tokenizer->normalizer_ != nullptr) {
        ARACH_ASSIGN_OR_RETURN(pattern, tokenizer->normalizer_->Normalize(std::move(pattern)));
      }
      normalized_patterns.push_back(std::move(pattern));
      normalized.push_back(std::move(token));
    } else {
      raw_patterns.push_back(token.content);
      raw.push_back(std::move(token));
    }
  }
  tokenizer->raw_matcher_ = AddedTokenMatcher(std::move(raw), std::move(raw_patterns));
  tokenizer->normalized_matcher_ = AddedTokenMatcher(std::move(normalized), std::move(normalized_patterns));
  tokenizer->vocab_size_ = max_id + 1;
  if (tokenizer->post_processor_ != nullptr) {  // its fixed ids must name tokens this vocabulary has
    std::vector<int32_t> special;
    tokenizer->post_processor_->AddSpecialTokens(special);
    for (int32_t id : special) {
      if (id < 0 || id >= tokenizer->vocab_size_) {
        return absl::InvalidArgumentError(absl::StrCat(tokenizer->description_, ": post_processor adds token id ", id,
                                                       ", outside the vocabulary (ids 0..", max_id, ")"));
      }
    }
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromTokenizerJson(const std::string& path, TokenizerConfig config) {
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  ARACH_ASSIGN_OR_RETURN(JsonComponent top, ComponentOf(root, path));
  Parts parts;
  top.Ignore("version");
  for (const char* key : {"truncation", "padding"}) {
    if (top.Get(key) != nullptr) return top.Error(absl::StrCat("\"", key, "\" is not supported (requests are never cut or padded)"));
  }
  const json* model = top.Get("model");
  if (model == nullptr) return top.Error("needs a \"model\"");
  ARACH_ASSIGN_OR_RETURN(parts.model, ParseModel(*model, absl::StrCat(path, ": model")));
  if (const json* added = top.Get("added_tokens"); added != nullptr) {
    ARACH_ASSIGN_OR_RETURN(parts.added, ParseAddedTokens(*added, absl::StrCat(path, ": added_tokens")));
  }
  if (const json* spec = top.Get("normalizer"); spec != nullptr) {
    ARACH_ASSIGN_OR_RETURN(parts.normalizer, ParseNormalizer(*spec, absl::StrCat(path, ": normalizer")));
  }
  if (const json* spec = top.Get("pre_tokenizer"); spec != nullptr) {
    ARACH_ASSIGN_OR_RETURN(parts.pre_tokenizer, ParsePreTokenizer(*spec, absl::StrCat(path, ": pre_tokenizer")));
  }
  if (const json* spec = top.Get("post_processor"); spec != nullptr) {
    ARACH_ASSIGN_OR_RETURN(parts.post_processor, ParsePostProcessor(*spec, absl::StrCat(path, ": post_processor")));
  }
  if (const json* spec = top.Get("decoder"); spec != nullptr) {
    ARACH_ASSIGN_OR_RETURN(parts.decoder, ParseDecoder(*spec, absl::StrCat(path, ": decoder")));
  }
  ARACH_RETURN_IF_ERROR(top.CheckAllRead());
  // tokenizer_config.json's add_bos_token / add_eos_token decide the special tokens, as transformers does.
  if (config.add_bos_token.has_value() || config.add_eos_token.has_value()) {
    auto id_of = [&](const std::optional<std::string>& token, const char* name) -> absl::StatusOr<int32_t> {
      if (!token) return absl::InvalidArgumentError(absl::StrCat(path, ": tokenizer_config.json asks for ", name, " but names none"));
      for (const AddedToken& added : parts.added) {
        if (added.content == *token) return added.id;
      }
      if (auto id = parts.model->TokenId(*token)) return *id;
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, " \"", *token, "\" is not in the vocabulary"));
    };
    int32_t bos = -1, eos = -1;
    if (config.add_bos_token.value_or(false)) {
      ARACH_ASSIGN_OR_RETURN(bos, id_of(config.bos_token, "bos_token"));
    }
    if (config.add_eos_token.value_or(false)) {
      ARACH_ASSIGN_OR_RETURN(eos, id_of(config.eos_token, "eos_token"));
    }
    parts.post_processor = BosEosProcessor(bos, eos);
  }
  parts.config = std::move(config);
  parts.description = absl::StrCat("BPE (", path, ")");
  return Assemble(std::move(parts));
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromVocabAndMerges(const std::string& vocab_path,
                                                                           const std::string& merges_path) {
  ARACH_ASSIGN_OR_RETURN(std::string vocab_text, ReadFileToString(vocab_path));
  const json vocab_json = json::parse(vocab_text, nullptr, /*allow_exceptions=*/false);
  if (vocab_json.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(vocab_path, ": not valid JSON"));
  ARACH_ASSIGN_OR_RETURN(auto vocab, ParseVocab(vocab_json, vocab_path));

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
  Parts parts;
  if (const auto it = vocab.find("<|endoftext|>"); it != vocab.end()) {
    AddedToken eot;
    eot.content = "<|endoftext|>";
    eot.id = it->second;
    eot.special = true;
    parts.added.push_back(eot);
  }
  ARACH_ASSIGN_OR_RETURN(parts.model, BpeModel::Create(std::move(vocab), merges, BpeOptions{}, merges_path));
  ARACH_ASSIGN_OR_RETURN(parts.pre_tokenizer, Gpt2ByteLevelPreTokenizer());
  parts.decoder = ByteLevelDecoder();
  parts.description = absl::StrCat("byte-level BPE (", vocab_path, " + merges.txt)");
  return Assemble(std::move(parts));
}

absl::Status HfTokenizer::EncodePlain(const std::string& text, bool at_start, std::vector<int32_t>& ids) const {
  std::string normalized = text;
  if (normalizer_ != nullptr) {
    ARACH_ASSIGN_OR_RETURN(normalized, normalizer_->Normalize(std::move(normalized)));
  }
  for (const TextSegment& segment : normalized_matcher_.Split(normalized)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    std::vector<TextPiece> pieces = {{segment.text, at_start && segment.offset == 0}};
    if (pre_tokenizer_ != nullptr) ARACH_RETURN_IF_ERROR(pre_tokenizer_->PreTokenize(pieces));
    for (const TextPiece& piece : pieces) ARACH_RETURN_IF_ERROR(model_.Encode(piece.text, ids));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> HfTokenizer::Encode(absl::string_view text, bool add_special_tokens) const {
  ARACH_RETURN_IF_ERROR(DecodeUtf8(text).status());  // reject malformed UTF-8 up front
  std::vector<int32_t> ids;
  for (const TextSegment& segment : raw_matcher_.Split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      ARACH_RETURN_IF_ERROR(EncodePlain(segment.text, segment.offset == 0, ids));
    }
  }
  if (add_special_tokens && post_processor_ != nullptr) post_processor_->AddSpecialTokens(ids);
  return ids;
}

absl::StatusOr<std::string> HfTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) {
      if (!(skip_special_tokens && it->second.special)) tokens.push_back(it->second.content);
      continue;
    }
    const std::string& token = model_.TokenString(id);
    if (!token.empty()) tokens.push_back(token);  // ids the tokenizer does not know (padding rows) decode to nothing
  }
  if (decoder_ == nullptr) return absl::StrJoin(tokens, " ");
  decoder_->DecodeChain(tokens);
  return absl::StrJoin(tokens, "");
}

std::optional<int32_t> HfTokenizer::TokenToId(absl::string_view token) const {
  if (const auto it = added_by_content_.find(std::string(token)); it != added_by_content_.end()) return it->second;
  return model_.TokenId(token);
}

std::optional<std::string> HfTokenizer::IdToToken(int32_t id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return it->second.content;
  const std::string& token = model_.TokenString(id);
  if (token.empty()) return std::nullopt;  // an id the vocabulary lacks (a padding row)
  return token;
}

bool HfTokenizer::IsSpecial(int32_t id) const {
  const auto it = added_by_id_.find(id);
  return it != added_by_id_.end() && it->second.special;
}

}  // namespace arach
