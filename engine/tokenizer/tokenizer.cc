#include "engine/tokenizer/tokenizer.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "engine/core/status.h"
#include "engine/tokenizer/byte_level_bpe_tokenizer.h"
#include "engine/tokenizer/llama2c_tokenizer.h"

namespace arach {
namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& dir) {
  std::error_code ec;
  const fs::path root(dir);
  if (fs::exists(root / "tokenizer.json", ec)) {
    ARACH_ASSIGN_OR_RETURN(auto tok, ByteLevelBpeTokenizer::FromTokenizerJson((root / "tokenizer.json").string()));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  if (fs::exists(root / "vocab.json", ec) && fs::exists(root / "merges.txt", ec)) {
    ARACH_ASSIGN_OR_RETURN(auto tok, ByteLevelBpeTokenizer::FromVocabAndMerges((root / "vocab.json").string(),
                                                                               (root / "merges.txt").string()));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  std::vector<fs::path> llama2c;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "tokenizer.bin" || (absl::StartsWith(name, "tok") && absl::EndsWith(name, ".bin"))) llama2c.push_back(entry.path());
  }
  std::sort(llama2c.begin(), llama2c.end());
  if (!llama2c.empty()) {
    ARACH_ASSIGN_OR_RETURN(auto tok, Llama2cTokenizer::FromFile(llama2c.front().string()));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  return absl::NotFoundError(absl::StrCat(dir, ": no tokenizer (tokenizer.json, vocab.json + merges.txt, or tokenizer.bin)"));
}

absl::StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text, int bos_id) {
  ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(text));
  if (tokenizer.prepends_bos() && bos_id >= 0) ids.insert(ids.begin(), bos_id);
  return ids;
}

}  // namespace arach
