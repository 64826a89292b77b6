#include "engine/tokenizer/llama2c_tokenizer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

absl::StatusOr<std::unique_ptr<Llama2cTokenizer>> Llama2cTokenizer::FromFile(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(std::string data, ReadFileToString(path));
  std::unique_ptr<Llama2cTokenizer> tok(new Llama2cTokenizer());
  if (data.size() < 4) return absl::InvalidArgumentError(absl::StrCat(path, ": too short for a llama2.c vocabulary"));
  size_t offset = 4;  // max_token_length (unused)
  while (offset < data.size()) {
    const size_t index = tok->pieces_.size();
    if (offset + 8 > data.size()) return absl::InvalidArgumentError(absl::StrCat(path, ": token ", index, " is truncated"));
    float score;
    int32_t length;
    std::memcpy(&score, data.data() + offset, 4);
    std::memcpy(&length, data.data() + offset + 4, 4);
    offset += 8;
    if (length < 0 || offset + static_cast<size_t>(length) > data.size()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": token ", index, " has an invalid length ", length));
    }
    tok->pieces_.emplace_back(data.data() + offset, static_cast<size_t>(length));
    tok->scores_.push_back(score);
    offset += static_cast<size_t>(length);
  }
  if (tok->pieces_.size() < 3) return absl::InvalidArgumentError(absl::StrCat(path, ": fewer than 3 tokens"));
  tok->byte_piece_.assign(256, -1);
  for (int32_t id = 0; id < static_cast<int32_t>(tok->pieces_.size()); ++id) {
    const std::string& piece = tok->pieces_[id];
    tok->ids_.try_emplace(piece, id);
    unsigned int byte;
    if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X>", &byte) == 1) tok->byte_piece_[byte] = id;
  }
  tok->description_ = absl::StrCat("llama2.c vocabulary (", path, ", ", tok->pieces_.size(), " tokens)");
  return tok;
}

absl::StatusOr<std::vector<int32_t>> Llama2cTokenizer::Encode(absl::string_view text, bool add_special_tokens) const {
  ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, EncodeText(text));
  if (add_special_tokens) ids.insert(ids.begin(), kBos);
  return ids;
}

absl::StatusOr<std::vector<int32_t>> Llama2cTokenizer::EncodeText(absl::string_view text) const {
  ARACH_ASSIGN_OR_RETURN(std::vector<CodePoint> chars, DecodeUtf8(text));
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  if (const auto it = ids_.find(" "); it != ids_.end()) ids.push_back(it->second);  // dummy prefix
  for (const CodePoint& c : chars) {
    const auto it = ids_.find(std::string(text.substr(c.offset, c.length)));
    if (it != ids_.end()) {
      ids.push_back(it->second);
      continue;
    }
    for (uint32_t k = 0; k < c.length; ++k) {  // byte fallback
      const int id = byte_piece_[static_cast<unsigned char>(text[c.offset + k])];
      if (id < 0) return absl::InvalidArgumentError(absl::StrCat("character at byte ", c.offset, " has no piece and no byte fallback"));
      ids.push_back(id);
    }
  }
  while (true) {  // merge the best-scoring pair until none is in the vocabulary
    float best_score = -1e30f;
    int best_index = -1;
    int32_t best_id = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = ids_.find(pieces_[ids[i]] + pieces_[ids[i + 1]]);
      if (it != ids_.end() && scores_[it->second] > best_score) {
        best_score = scores_[it->second];
        best_index = static_cast<int>(i);
        best_id = it->second;
      }
    }
    if (best_index < 0) break;
    ids[best_index] = best_id;
    ids.erase(ids.begin() + best_index + 1);
  }
  return ids;
}

absl::StatusOr<std::string> Llama2cTokenizer::Decode(std::span<const int32_t> ids, bool /*skip_special_tokens*/) const {
  std::string out;
  int32_t previous = -1;
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(pieces_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is not in the vocabulary (size ", pieces_.size(), ")"));
    }
    const std::string& piece = pieces_[id];
    const int32_t prev = previous;
    previous = id;
    if (id == kUnk || id == kBos || id == kEos) continue;
    unsigned int byte;
    if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X>", &byte) == 1) {
      out.push_back(static_cast<char>(byte));
    } else if (prev == kBos && !piece.empty() && piece[0] == ' ') {
      out.append(piece, 1, std::string::npos);
    } else {
      out += piece;
    }
  }
  return out;
}

std::optional<int32_t> Llama2cTokenizer::TokenToId(absl::string_view token) const {
  const auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Llama2cTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return std::nullopt;
  return pieces_[static_cast<size_t>(id)];
}

}  // namespace arach
