#include "engine/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

BpeModel::BpeModel(BpeModel&& other) noexcept { *this = std::move(other); }

BpeModel& BpeModel::operator=(BpeModel&& other) noexcept {
  vocab_ = std::move(other.vocab_);
  id_to_token_ = std::move(other.id_to_token_);
  merges_ = std::move(other.merges_);
  options_ = std::move(other.options_);
  unk_id_ = other.unk_id_;
  byte_ids_ = std::move(other.byte_ids_);
  return *this;  // the cache starts empty
}

absl::StatusOr<BpeModel> BpeModel::Create(BpeVocabulary vocab,
                                          const std::vector<std::pair<std::string, std::string>>& merges,
                                          const BpeOptions& options, const std::string& source) {
  BpeModel model;
  model.options_ = options;
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return absl::InvalidArgumentError(absl::StrCat(source, ": token \"", token, "\" has negative id ", id));
    max_id = std::max(max_id, id);
  }
  model.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  // An id two tokens share decodes to the lesser string, whatever order the map holds them in.
  std::vector<bool> named(model.id_to_token_.size(), false);
  for (const auto& [token, id] : vocab) {
    std::string& name = model.id_to_token_[id];
    if (!named[id] || token < name) name = token;
    named[id] = true;
  }
  model.vocab_ = std::move(vocab);
  model.merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto l = model.vocab_.find(left);
    const auto r = model.vocab_.find(right);
    // The merged token drops the right part's continuing_subword_prefix.
    const size_t prefix = absl::StartsWith(right, options.continuing_subword_prefix) ? options.continuing_subword_prefix.size() : 0;
    merged.assign(left).append(right, prefix);
    const auto m = model.vocab_.find(merged);
    if (l == model.vocab_.end() || r == model.vocab_.end() || m == model.vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", rank, " (\"", left, "\" \"", right,
                                                     "\") uses a token missing from the vocabulary"));
    }
    // The first occurrence of a pair wins (lower rank).
    model.merges_.try_emplace(PairKey(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }
  if (options.unk_token) {
    const auto it = model.vocab_.find(*options.unk_token);
    if (it == model.vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": unk_token \"", *options.unk_token, "\" is not in the vocabulary"));
    }
    model.unk_id_ = it->second;
  }
  if (options.byte_fallback) {
    model.byte_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      if (const auto it = model.vocab_.find(name); it != model.vocab_.end()) model.byte_ids_[b] = it->second;
    }
  }
  return model;
}

const std::string& BpeModel::TokenString(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < static_cast<int32_t>(id_to_token_.size()) ? id_to_token_[id] : kEmpty;
}

std::optional<int32_t> BpeModel::TokenId(absl::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

std::vector<int32_t> BpeModel::InitialSymbols(absl::string_view piece) const {
  std::vector<int32_t> symbols;
  bool previous_unk = false;
  size_t i = 0;
  while (i < piece.size()) {
    size_t end = i + 1;
    while (end < piece.size() && (static_cast<unsigned char>(piece[end]) & 0xc0) == 0x80) ++end;
    const absl::string_view character = piece.substr(i, end - i);
    std::string symbol;
    if (i > 0) symbol = options_.continuing_subword_prefix;
    symbol.append(character.data(), character.size());
    if (end == piece.size()) symbol += options_.end_of_word_suffix;
    if (const auto it = vocab_.find(symbol); it != vocab_.end()) {
      symbols.push_back(it->second);
      previous_unk = false;
    } else {
      bool bytes_known = options_.byte_fallback;
      for (unsigned char b : character) bytes_known = bytes_known && byte_ids_[b] >= 0;
      if (bytes_known) {
        for (unsigned char b : character) symbols.push_back(byte_ids_[b]);
        previous_unk = false;
      } else if (unk_id_) {
        if (!(previous_unk && options_.fuse_unk)) symbols.push_back(*unk_id_);
        previous_unk = true;
      }  // else: no unknown token; the character is dropped, as tokenizers does
    }
    i = end;
  }
  return symbols;
}

void BpeModel::MergeAll(std::vector<int32_t>& id) const {
  const int n = static_cast<int>(id.size());
  std::vector<int32_t> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // Candidate merges ordered by (rank, position); stale entries are skipped when popped.
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t left_id;
    int32_t right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const int right = next[left];
    const auto it = merges_.find(PairKey(id[left], id[right]));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left, id[left], id[right]});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  std::vector<bool> alive(n, true);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const int left = c.pos;
    const int right = next[left];
    if (!alive[left] || right < 0 || id[left] != c.left_id || id[right] != c.right_id) continue;  // stale
    id[left] = merges_.at(PairKey(c.left_id, c.right_id)).merged_id;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  std::vector<int32_t> merged;
  for (int i = 0; i >= 0 && i < n; i = next[i]) merged.push_back(id[i]);
  id = std::move(merged);
}

absl::Status BpeModel::Encode(absl::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return absl::OkStatus();
  if (options_.ignore_merges) {
    if (const auto it = vocab_.find(piece); it != vocab_.end()) {
      out.push_back(it->second);
      return absl::OkStatus();
    }
  }
  const bool cacheable = piece.size() < kMaxCachedPieceBytes;
  if (cacheable) {
    absl::MutexLock lock(&cache_mutex_);
    if (const auto it = cache_.find(piece); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return absl::OkStatus();
    }
  }
  std::vector<int32_t> symbols = InitialSymbols(piece);
  MergeAll(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    absl::MutexLock lock(&cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(piece), std::move(symbols));
  }
  return absl::OkStatus();
}

}  // namespace arach
