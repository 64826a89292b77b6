// A BPE vocabulary and its ranked merges, as tokenizer.json's "BPE" model describes them. Encodes one
// pre-tokenized piece: its characters become symbols (with continuing_subword_prefix / end_of_word_suffix),
// characters missing from the vocabulary become <0xNN> byte pieces (byte_fallback) or the unknown token
// (fused when fuse_unk; dropped when there is no unknown token, as tokenizers does), then the adjacent pair
// of lowest rank is merged, leftmost first, until no merge applies. Results are cached per piece.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace arach {

struct BpeOptions {
  bool ignore_merges = false;            // a piece that is itself a token is taken whole (Llama 3)
  bool byte_fallback = false;            // unknown characters as <0xNN> pieces (Llama 2, Mistral)
  std::optional<std::string> unk_token;  // stands for unknown characters
  bool fuse_unk = false;                 // consecutive unknown characters give one unknown token
  std::string continuing_subword_prefix;  // prefixed to every symbol but a piece's first
  std::string end_of_word_suffix;         // suffixed to a piece's last symbol
};

// A BPE vocabulary: token string -> id.
using BpeVocabulary = absl::flat_hash_map<std::string, int32_t>;

class BpeModel {
 public:
  // `vocab`: token string -> id. `merges`: pairs in rank order (rank 0 first). `source` names the file in
  // errors (a merge whose parts or result are missing from the vocabulary, an unknown token that is not in it).
  static absl::StatusOr<BpeModel> Create(BpeVocabulary vocab,
                                         const std::vector<std::pair<std::string, std::string>>& merges,
                                         const BpeOptions& options, const std::string& source);
  BpeModel(BpeModel&& other) noexcept;
  BpeModel& operator=(BpeModel&& other) noexcept;

  // Appends the ids of `piece` (valid UTF-8) to `out`.
  absl::Status Encode(absl::string_view piece, std::vector<int32_t>& out) const;

  // Token string of `id` ("" when the id is unknown).
  const std::string& TokenString(int32_t id) const;
  std::optional<int32_t> TokenId(absl::string_view token) const;
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  BpeModel() = default;
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  // The symbols of `piece` before any merge.
  std::vector<int32_t> InitialSymbols(absl::string_view piece) const;
  void MergeAll(std::vector<int32_t>& symbols) const;

  static constexpr size_t kCacheCapacity = 10000;  // pieces, as tokenizers keeps
  static constexpr size_t kMaxCachedPieceBytes = 256;

  BpeVocabulary vocab_;
  std::vector<std::string> id_to_token_;
  absl::flat_hash_map<uint64_t, Merge> merges_;  // PairKey(left, right) -> the merge's rank and token
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::vector<int32_t> byte_ids_;  // [256] id of "<0xNN>", or -1 (byte_fallback)
  mutable absl::Mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_ ABSL_GUARDED_BY(cache_mutex_);
};

}  // namespace arach
