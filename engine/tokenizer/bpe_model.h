// A BPE vocabulary and its ranked merges; encodes one pre-tokenized piece (already in the byte-level
// alphabet) by repeatedly merging the adjacent pair of lowest rank, leftmost first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach {

class BpeModel {
 public:
  // `vocab`: token string -> id. `merges`: pairs in rank order (rank 0 first). `source` names the file in
  // errors. With ignore_merges, a piece that is itself in the vocabulary is taken whole (Llama 3 style).
  static absl::StatusOr<BpeModel> Create(std::unordered_map<std::string, int32_t> vocab,
                                         const std::vector<std::pair<std::string, std::string>>& merges,
                                         bool ignore_merges, const std::string& source);

  // Appends the ids of `piece` to `out`. Every character of the piece must be a vocabulary token.
  absl::Status Encode(absl::string_view piece, std::vector<int32_t>& out) const;

  // Token string of `id` ("" when the id is unknown).
  const std::string& TokenString(int32_t id) const;
  std::optional<int32_t> TokenId(absl::string_view token) const;
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
};

}  // namespace arach
