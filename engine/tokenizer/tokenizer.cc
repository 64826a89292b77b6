#include "engine/tokenizer/tokenizer.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "engine/core/status.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/llama2c_tokenizer.h"

namespace arach {
namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& dir) {
  std::error_code ec;
  const fs::path root(dir);
  if (fs::exists(root / "tokenizer.json", ec)) {
    TokenizerConfig config;
    if (fs::exists(root / "tokenizer_config.json", ec)) {
      ARACH_ASSIGN_OR_RETURN(config, LoadTokenizerConfig((root / "tokenizer_config.json").string()));
    }
    ARACH_ASSIGN_OR_RETURN(auto tok, HfTokenizer::FromTokenizerJson((root / "tokenizer.json").string(), std::move(config)));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  if (fs::exists(root / "vocab.json", ec) && fs::exists(root / "merges.txt", ec)) {
    ARACH_ASSIGN_OR_RETURN(auto tok, HfTokenizer::FromVocabAndMerges((root / "vocab.json").string(), (root / "merges.txt").string()));
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

const TokenizerConfig& Tokenizer::config() const {
  static const TokenizerConfig kNone;
  return kNone;
}

absl::StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tokenizer, absl::string_view text) {
  return tokenizer.Encode(text, /*add_special_tokens=*/true);
}

}  // namespace arach
