#include "engine/tokenizer/bpe_model.h"

#include <queue>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/unicode.h"

namespace arach {

absl::StatusOr<BpeModel> BpeModel::Create(std::unordered_map<std::string, int32_t> vocab,
                                          const std::vector<std::pair<std::string, std::string>>& merges,
                                          bool ignore_merges, const std::string& source) {
  BpeModel model;
  model.ignore_merges_ = ignore_merges;
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return absl::InvalidArgumentError(absl::StrCat(source, ": token \"", token, "\" has negative id ", id));
    max_id = std::max(max_id, id);
  }
  model.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : vocab) model.id_to_token_[id] = token;
  model.vocab_ = std::move(vocab);
  model.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto l = model.vocab_.find(left);
    const auto r = model.vocab_.find(right);
    const auto m = model.vocab_.find(left + right);
    if (l == model.vocab_.end() || r == model.vocab_.end() || m == model.vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", rank, " (\"", left, "\" \"", right,
                                                     "\") uses a token missing from the vocabulary"));
    }
    // The first occurrence of a pair wins (lower rank).
    model.merges_.try_emplace(PairKey(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }
  return model;
}

const std::string& BpeModel::TokenString(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < static_cast<int32_t>(id_to_token_.size()) ? id_to_token_[id] : kEmpty;
}

std::optional<int32_t> BpeModel::TokenId(absl::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

absl::Status BpeModel::Encode(absl::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return absl::OkStatus();
  if (ignore_merges_) {
    if (const auto it = vocab_.find(std::string(piece)); it != vocab_.end()) {
      out.push_back(it->second);
      return absl::OkStatus();
    }
  }
  // Symbols as a doubly linked list over the piece's characters.
  ARACH_ASSIGN_OR_RETURN(std::vector<CodePoint> chars, DecodeUtf8(piece));
  const int n = static_cast<int>(chars.size());
  std::vector<int32_t> id(n), prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    const auto it = vocab_.find(std::string(piece.substr(chars[i].offset, chars[i].length)));
    if (it == vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("character at byte ", chars[i].offset, " of \"", piece,
                                                     "\" has no token in the vocabulary"));
    }
    id[i] = it->second;
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
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(id[i]);
  return absl::OkStatus();
}

}  // namespace arach
