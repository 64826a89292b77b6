// The llama2.c vocabulary file (tokenizer.bin, tok512.bin, ...):
//   int32 max_token_length, then per token: float32 score, int32 byte length, bytes.
// Pieces "<0xHH>" stand for raw bytes; ids 0, 1, 2 are <unk>, BOS and EOS.
// Encoding follows llama2.c (SentencePiece BPE): a leading " " (dummy prefix), one piece per character
// with byte fallback, then repeatedly merge the adjacent pair whose joined piece has the highest score.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace arach {

class Llama2cTokenizer final : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Llama2cTokenizer>> FromFile(const std::string& path);

  // With add_special_tokens, BOS first (SentencePiece convention).
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special_tokens) const override;
  // Concatenated pieces; byte pieces become their byte; BOS/EOS/<unk> always decode to nothing; a piece
  // right after BOS loses its leading space (llama2.c's rule).
  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override { return id == kUnk || id == kBos || id == kEos; }
  std::string Describe() const override { return description_; }

  static constexpr int32_t kUnk = 0;
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;

 private:
  Llama2cTokenizer() = default;
  absl::StatusOr<std::vector<int32_t>> EncodeText(absl::string_view text) const;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<int> byte_piece_;  // [256] id of "<0xHH>", or -1
  std::string description_;
};

}  // namespace arach
